// Generator specs: parsing, defaults, range checks and the canonical text. The matrices themselves
// are built in generator_kinds.cpp.
#include "dbsparse/generators.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "runtime/generators/generator_kinds.hpp"

namespace dbsparse {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

struct ParamDef {
  const char* name;
  bool real;
  const char* fallback;  // empty: derived from other parameters (see fill_derived_defaults)
};

struct KindDef {
  const char* name;
  const char* help;
  std::vector<ParamDef> params;
};

const std::vector<KindDef>& kinds() {
  static const std::vector<KindDef> k = {
      {"stencil2d", "stencil2d:n=512  5-point Laplacian on an n x n grid", {{"n", false, "512"}}},
      {"stencil3d",
       "stencil3d:n=64,points=7  7- or 27-point Laplacian on an n^3 grid",
       {{"n", false, "64"}, {"points", false, "7"}}},
      {"fem",
       "fem:nodes=100000,k=3,blocks=9,seed=1  dense k x k blocks, `blocks` block columns per block "
       "row near the diagonal",
       {{"nodes", false, "100000"}, {"k", false, "3"}, {"blocks", false, "9"}, {"seed", false, "1"}}},
      {"banded", "banded:n=100000,bw=8  all entries with |i-j| <= bw", {{"n", false, "100000"}, {"bw", false, "8"}}},
      {"uniform",
       "uniform:n=100000,d=16,seed=1  d distinct random columns per row",
       {{"n", false, "100000"}, {"d", false, "16"}, {"seed", false, "1"}}},
      {"rmat",
       "rmat:scale=16,ef=8,seed=1,scramble=0  Graph500 R-MAT graph on 2^scale vertices with "
       "ef*2^scale edges, symmetrised, no self loops; scramble=1 permutes the vertex ids at random "
       "(seeded), as Graph500 does, so hubs do not sit together in the low ids",
       {{"scale", false, "16"}, {"ef", false, "8"}, {"seed", false, "1"}, {"scramble", false, "0"}}},
      {"powerlaw",
       "powerlaw:n=100000,avg=8,alpha=1.5,max=n/4,seed=1  Pareto(alpha) row lengths with mean "
       "about avg, clamped to [1, max]",
       {{"n", false, "100000"}, {"avg", true, "8"}, {"alpha", true, "1.5"}, {"max", false, ""}, {"seed", false, "1"}}},
      {"roadnet",
       "roadnet:n=100000,seed=1  road-network-like graph after roadNet-TX: a sqrt(n)-wide grid with 40% of "
       "its edges removed, a diagonal in 18% of its cells and rare interchange links; symmetric, about "
       "2.8 entries a row, at most about 12",
       {{"n", false, "100000"}, {"seed", false, "1"}}},
      {"community",
       "community:n=100000,k=100,p_in=0.02,p_out=0.00005,seed=1,scramble=0  stochastic block model: k "
       "communities of consecutive ids, pairs linked with chance p_in inside one and p_out between; symmetric, no "
       "self loops; scramble=1 permutes the vertex ids",
       {{"n", false, "100000"},
        {"k", false, "100"},
        {"p_in", true, "0.02"},
        {"p_out", true, "0.00005"},
        {"seed", false, "1"},
        {"scramble", false, "0"}}},
      {"pruned",
       "pruned:rows=4096,cols=4096,density=0.3,block=1,seed=1  a dense normal(0, 1) weight matrix pruned by "
       "magnitude to round(density * cols) entries a row, or with block > 1 to whole block x block tiles "
       "(largest sum |w|) in each block row",
       {{"rows", false, "4096"},
        {"cols", false, "4096"},
        {"density", true, "0.3"},
        {"block", false, "1"},
        {"seed", false, "1"}}},
  };
  return k;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

template <class F>
std::string join(const std::vector<ParamDef>& params, F f) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : ", ") + f(p);
  return out;
}

// Integers also accept an exact floating form (n=1e6); the canonical text is the plain integer.
std::string canonical_value(const std::string& spec, const ParamDef& def, const std::string& v) {
  const char* end = v.data() + v.size();
  if (!def.real) {
    int64_t i = 0;
    auto r = std::from_chars(v.data(), end, i);
    if (r.ec == std::errc() && r.ptr == end) return std::to_string(i);
  }
  double d = 0;
  auto r = std::from_chars(v.data(), end, d);
  const bool ok = r.ec == std::errc() && r.ptr == end && std::isfinite(d);
  if (def.real && ok) return fmt::format("{}", d);
  if (!def.real && ok && d == std::floor(d) && std::fabs(d) < 0x1.0p62) return std::to_string(static_cast<int64_t>(d));
  throw InputError(spec, 0,
                   fmt::format("{} for parameter '{}', got '{}'", def.real ? "a number" : "an integer", def.name, v));
}

// For values already canonicalised by canonical_value; from_chars, unlike stod, ignores the locale.
template <class N>
N parse_number(const std::string& v) {
  N n{};
  std::from_chars(v.data(), v.data() + v.size(), n);
  return n;
}

class Params {
 public:
  Params(const GeneratorSpec& s, const std::string& text) : s_(s), text_(text) {}
  int64_t integer(const char* name) const { return parse_number<int64_t>(s_.params.at(name)); }
  double real(const char* name) const { return parse_number<double>(s_.params.at(name)); }
  // Checks lo <= name <= hi and returns the value.
  int64_t in_range(const char* name, int64_t lo, int64_t hi) const {
    const int64_t v = integer(name);
    if (v < lo || v > hi) fail(fmt::format("{} in [{}, {}], got {}", name, lo, hi, v));
    return v;
  }
  void check_nnz(int64_t nnz, const char* how = "") const {
    if (nnz > kMaxIndex) fail(fmt::format("at most 2^31-1 nonzeros, but this would have {}{}", how, nnz));
  }
  [[noreturn]] void fail(const std::string& expected) const { throw InputError(text_, 0, expected); }

 private:
  const GeneratorSpec& s_;
  const std::string& text_;
};

void fill_derived_defaults(GeneratorSpec& s) {
  if (s.kind == "powerlaw" && !s.params.contains("max"))
    s.params["max"] = std::to_string(std::max<int64_t>(1, parse_number<int64_t>(s.params.at("n")) / 4));
}

uint64_t seed_of(const Params& p) { return static_cast<uint64_t>(p.in_range("seed", 0, INT64_MAX)); }

CsrMatrix<double> build(const GeneratorSpec& s, const std::string& text) {
  const Params p(s, text);
  if (s.kind == "stencil2d") {
    const int64_t n = p.in_range("n", 1, 46340);
    p.check_nnz(n * n + 4 * n * (n - 1));
    return gen::stencil2d(static_cast<int32_t>(n));
  }
  if (s.kind == "stencil3d") {
    const int64_t n = p.in_range("n", 1, 1290);
    const int64_t points = p.integer("points");
    if (points != 7 && points != 27) p.fail(fmt::format("points = 7 or 27, got {}", points));
    p.check_nnz(points == 27 ? (3 * n - 2) * (3 * n - 2) * (3 * n - 2) : n * n * n + 6 * n * n * (n - 1));
    return gen::stencil3d(static_cast<int32_t>(n), static_cast<int>(points));
  }
  if (s.kind == "fem") {
    const int64_t nodes = p.in_range("nodes", 1, kMaxIndex);
    const int64_t k = p.in_range("k", 1, 1024);
    const int64_t blocks = p.in_range("blocks", 1, (nodes + k - 1) / k);
    // A lower bound here keeps the block lists small; the exact count is checked once drawn.
    p.check_nnz((nodes / k - 1) * k * (blocks - 1) * k, "at least ");
    return gen::fem(static_cast<int32_t>(nodes), static_cast<int32_t>(k), static_cast<int32_t>(blocks), seed_of(p),
                    text);
  }
  if (s.kind == "banded") {
    const int64_t n = p.in_range("n", 1, kMaxIndex);
    const int64_t bw = p.in_range("bw", 0, n - 1);
    p.check_nnz(n * (2 * bw + 1) - bw * (bw + 1));
    return gen::banded(static_cast<int32_t>(n), static_cast<int32_t>(bw));
  }
  if (s.kind == "uniform") {
    const int64_t n = p.in_range("n", 1, kMaxIndex);
    const int64_t d = p.in_range("d", 1, n);
    p.check_nnz(n * d);
    return gen::uniform(static_cast<int32_t>(n), static_cast<int32_t>(d), seed_of(p));
  }
  if (s.kind == "rmat") {
    const int64_t scale = p.in_range("scale", 1, 30);
    const int64_t ef = p.in_range("ef", 1, kMaxIndex);
    // Both directions of every edge are stored before duplicates go.
    p.check_nnz((2 * ef) << scale, "up to ");
    const bool scramble = p.in_range("scramble", 0, 1) == 1;
    return gen::rmat(static_cast<int>(scale), static_cast<int32_t>(ef), seed_of(p), scramble);
  }
  if (s.kind == "powerlaw") {
    const int64_t n = p.in_range("n", 1, kMaxIndex);
    const double avg = p.real("avg"), alpha = p.real("alpha");
    if (!(avg > 0)) p.fail(fmt::format("avg > 0, got {}", avg));
    if (!(alpha > 1)) p.fail(fmt::format("alpha > 1 (a finite mean), got {}", alpha));
    const int64_t max = p.in_range("max", 1, n);
    return gen::powerlaw(static_cast<int32_t>(n), avg, alpha, static_cast<int32_t>(max), seed_of(p), text);
  }
  if (s.kind == "roadnet") {
    // About 1.5 edges a vertex, both directions stored: 2^28 vertices stay well below 2^31-1
    // entries; the exact count is checked once drawn.
    const int64_t n = p.in_range("n", 1, int64_t{1} << 28);
    return gen::roadnet(static_cast<int32_t>(n), seed_of(p), text);
  }
  if (s.kind == "community") {
    const int64_t n = p.in_range("n", 1, kMaxIndex);
    const int64_t k = p.in_range("k", 1, n);
    const double p_in = p.real("p_in"), p_out = p.real("p_out");
    if (!(p_in >= 0 && p_in <= 1)) p.fail(fmt::format("p_in in [0, 1], got {}", p_in));
    if (!(p_out >= 0 && p_out <= 1)) p.fail(fmt::format("p_out in [0, 1], got {}", p_out));
    // The expected count, before drawing anything (the exact one is checked while drawing).
    const int64_t q = n / k, extra = n % k;
    const double pairs_in =
        double(extra) * double(q + 1) * double(q) / 2 + double(k - extra) * double(q) * double(q - 1) / 2;
    const double pairs_out = double(n) * double(n - 1) / 2 - pairs_in;
    const double expected = 2 * (p_in * pairs_in + p_out * pairs_out);
    if (expected > double(kMaxIndex))
      p.fail(fmt::format("at most 2^31-1 nonzeros, but this would have about {:.0f}", expected));
    const bool scramble = p.in_range("scramble", 0, 1) == 1;
    return gen::community(static_cast<int32_t>(n), static_cast<int32_t>(k), p_in, p_out, seed_of(p), scramble, text);
  }
  if (s.kind == "pruned") {
    const int64_t rows = p.in_range("rows", 1, kMaxIndex);
    const int64_t cols = p.in_range("cols", 1, kMaxIndex);
    const double density = p.real("density");
    if (!(density > 0 && density <= 1)) p.fail(fmt::format("density in (0, 1], got {}", density));
    const int64_t block = p.in_range("block", 1, std::min(rows, cols));
    if (rows % block != 0 || cols % block != 0)
      p.fail(fmt::format("block dividing rows and cols, got block {} for {} x {}", block, rows, cols));
    // Every weight is drawn before pruning: a bound on the work, not only on the result.
    if (rows * cols > int64_t{1} << 32) p.fail(fmt::format("rows * cols at most 2^32, got {}", rows * cols));
    p.check_nnz(rows * std::max<int64_t>(1, std::llround(density * double(cols / block))) * block);
    return gen::pruned(static_cast<int32_t>(rows), static_cast<int32_t>(cols), density, static_cast<int32_t>(block),
                       seed_of(p));
  }
  p.fail("a known generator kind");  // parse_generator_spec has already rejected unknown kinds
}

}  // namespace

std::string GeneratorSpec::to_string() const {
  std::string out = kind;
  char sep = ':';
  for (const auto& [k, v] : params) {
    out += fmt::format("{}{}={}", sep, k, v);
    sep = ',';
  }
  return out;
}

GeneratorSpec parse_generator_spec(const std::string& text) {
  const auto colon = text.find(':');
  GeneratorSpec s;
  s.kind = trim(std::string_view(text).substr(0, colon));
  const KindDef* kind = nullptr;
  for (const auto& k : kinds())
    if (s.kind == k.name) kind = &k;
  if (kind == nullptr) {
    std::string names;
    for (const auto& k : kinds()) names += (names.empty() ? "" : ", ") + std::string(k.name);
    throw InputError(text, 0, fmt::format("a generator kind ({}), got '{}'", names, s.kind));
  }
  if (colon != std::string::npos) {
    std::string_view rest = std::string_view(text).substr(colon + 1);
    while (!trim(rest).empty()) {
      const auto comma = rest.find(',');
      const std::string item = trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      const auto eq = item.find('=');
      const std::string key = trim(std::string_view(item).substr(0, eq));
      const std::string value = eq == std::string::npos ? "" : trim(std::string_view(item).substr(eq + 1));
      if (key.empty() || value.empty())
        throw InputError(text, 0, fmt::format("name=value pairs separated by commas, got '{}'", item));
      const ParamDef* def = nullptr;
      for (const auto& p : kind->params)
        if (key == p.name) def = &p;
      if (def == nullptr)
        throw InputError(text, 0,
                         fmt::format("a parameter of {} ({}), got '{}'", kind->name,
                                     join(kind->params, [](const ParamDef& p) { return std::string(p.name); }), key));
      if (s.params.contains(key))
        throw InputError(text, 0, fmt::format("each parameter once, but '{}' is repeated", key));
      s.params[key] = canonical_value(text, *def, value);
    }
  }
  for (const auto& p : kind->params)
    if (*p.fallback != '\0' && !s.params.contains(p.name)) s.params[p.name] = p.fallback;
  fill_derived_defaults(s);
  return s;
}

CsrMatrix<double> generate(const GeneratorSpec& spec) { return generate(spec.to_string()); }

CsrMatrix<double> generate(const std::string& text) {
  const GeneratorSpec s = parse_generator_spec(text);
  return build(s, text);  // HostMemoryError past the host's memory: load_matrix names the spec
}

std::string generator_help() {
  std::string out;
  for (const auto& k : kinds()) out += std::string(k.help) + "\n";
  return out;
}

}  // namespace dbsparse
