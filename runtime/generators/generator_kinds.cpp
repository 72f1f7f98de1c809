// The matrix kinds behind generate(). Everything here must give bit-identical output on any machine
// for the same arguments, so randomness is std::mt19937_64 (its sequence is fixed by the standard)
// mapped to numbers by our own integer arithmetic; the standard distributions are not portable.
#include "runtime/generators/generator_kinds.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "dbsparse/error.hpp"
#include "support/host_memory.hpp"

namespace dbsparse::gen {
namespace {

constexpr int64_t kMaxNnz = std::numeric_limits<int32_t>::max();

// Odd multiples of 2^-52 shifted into (-1, 1): exact, symmetric, and never an explicit zero.
double to_value(uint64_t r) {
  const auto k = static_cast<int64_t>(r >> 12);  // 52 random bits
  return static_cast<double>(2 * k + 1 - (int64_t{1} << 52)) * 0x1.0p-52;
}

// In (0, 1): never 0, so its log is finite.
double to_unit_open(uint64_t r) { return (static_cast<double>(r >> 11) + 0.5) * 0x1.0p-53; }

// Uniform in [0, m) by multiply-shift; the bias (below 2^-33 for m < 2^31) does not matter here.
int32_t below(std::mt19937_64& rng, int64_t m) {
  return static_cast<int32_t>((static_cast<unsigned __int128>(rng()) * static_cast<uint64_t>(m)) >> 64);
}

// splitmix64's finaliser: values that must depend on (row, col) rather than on generation order.
uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// log and exp from + - * / only: libm's are not guaranteed to round alike on every platform, and a
// row length that differs by one would change the matrix. Steps are separate statements so that no
// compiler fuses them into FMAs (GCC in ISO mode and Clang only contract within one expression).
double det_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // exact
  if (m < 0.70710678118654752) {
    m = m * 2;
    e -= 1;
  }
  const double z = (m - 1) / (m + 1);  // |z| < 0.172: atanh series converges fast
  const double z2 = z * z;
  double p = 1.0 / 25;
  for (int i = 23; i >= 1; i -= 2) {
    const double t = p * z2;
    p = t + 1.0 / i;
  }
  const double lm = 2 * z * p;
  const double le = e * 0.69314718055994531;
  return lm + le;
}

double det_exp(double x) {
  const double k = std::floor(x * 1.4426950408889634 + 0.5);
  const double kl = k * 0.69314718055994531;
  const double r = x - kl;  // |r| <= 0.35
  double p = 1.0;
  for (int i = 18; i >= 1; --i) {
    const double t = p * r;
    p = t / i + 1.0;
  }
  return std::ldexp(p, static_cast<int>(k));  // exact
}

// Fills `out` with d distinct values from [0, m), sorted. Batches of draws, then sort+unique, until
// there are d; for d > m/2 it draws the complement instead so that the batches converge quickly.
void sample_distinct(std::mt19937_64& rng, int64_t m, int64_t d, std::vector<int32_t>& out,
                     std::vector<int32_t>& scratch) {
  auto draw = [&](int64_t count, std::vector<int32_t>& v) {
    v.clear();
    while (static_cast<int64_t>(v.size()) < count) {
      for (int64_t i = static_cast<int64_t>(v.size()); i < count; ++i) v.push_back(below(rng, m));
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
    }
  };
  if (2 * d <= m) {
    draw(d, out);
    return;
  }
  draw(m - d, scratch);
  out.clear();
  size_t s = 0;
  for (int32_t c = 0; c < m; ++c) {
    if (s < scratch.size() && scratch[s] == c) {
      ++s;
    } else {
      out.push_back(c);
    }
  }
}

struct CsrBuilder {
  CsrMatrix<double> m;
  CsrBuilder(int32_t rows, int32_t cols, int64_t nnz) {
    require_host_bytes(4.0 * (double(rows) + 1) + 12.0 * double(nnz),
                       fmt::format("a {} x {} matrix with {} entries", rows, cols, nnz));
    m.rows = rows;
    m.cols = cols;
    m.row_ptr.reserve(static_cast<size_t>(rows) + 1);
    m.col_idx.reserve(static_cast<size_t>(nnz));
    m.values.reserve(static_cast<size_t>(nnz));
  }
  void push(int32_t c, double v) {
    m.col_idx.push_back(c);
    m.values.push_back(v);
  }
  void end_row() { m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size())); }
};

}  // namespace

CsrMatrix<double> stencil2d(int32_t n) {
  const int64_t nn = int64_t{n} * n;
  CsrBuilder b(static_cast<int32_t>(nn), static_cast<int32_t>(nn), nn + 4 * int64_t{n} * (n - 1));
  for (int32_t y = 0; y < n; ++y) {
    for (int32_t x = 0; x < n; ++x) {
      const int32_t row = y * n + x;
      if (y > 0) b.push(row - n, -1.0);
      if (x > 0) b.push(row - 1, -1.0);
      b.push(row, 4.0);
      if (x + 1 < n) b.push(row + 1, -1.0);
      if (y + 1 < n) b.push(row + n, -1.0);
      b.end_row();
    }
  }
  return std::move(b.m);
}

CsrMatrix<double> stencil3d(int32_t n, int points) {
  // Offsets in lexicographic (dz, dy, dx) order, so that the columns of a row come out sorted.
  std::vector<std::array<int, 3>> offsets;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (points == 27 || std::abs(dz) + std::abs(dy) + std::abs(dx) <= 1) offsets.push_back({dz, dy, dx});
  const int64_t n3 = int64_t{n} * n * n;
  const int64_t nnz =
      points == 27 ? (3 * int64_t{n} - 2) * (3 * n - 2) * (3 * n - 2) : n3 + 6 * int64_t{n} * n * (n - 1);
  const double diag = points - 1;
  CsrBuilder b(static_cast<int32_t>(n3), static_cast<int32_t>(n3), nnz);
  for (int32_t z = 0; z < n; ++z) {
    for (int32_t y = 0; y < n; ++y) {
      for (int32_t x = 0; x < n; ++x) {
        for (const auto& [dz, dy, dx] : offsets) {
          const int32_t zz = z + dz, yy = y + dy, xx = x + dx;
          if (zz < 0 || zz >= n || yy < 0 || yy >= n || xx < 0 || xx >= n) continue;
          const bool centre = dz == 0 && dy == 0 && dx == 0;
          b.push((zz * n + yy) * n + xx, centre ? diag : -1.0);
        }
        b.end_row();
      }
    }
  }
  return std::move(b.m);
}

CsrMatrix<double> fem(int32_t nodes, int32_t k, int32_t blocks, uint64_t seed, const std::string& spec) {
  std::mt19937_64 rng(seed);
  const int32_t nb = (nodes + k - 1) / k;
  auto width = [&](int32_t blk) { return std::min(k, nodes - blk * k); };
  // Off-diagonal blocks come from a window of about 4*blocks block columns around the diagonal, as
  // element connectivity of a well-numbered mesh would give.
  const int32_t half = 2 * blocks;
  std::vector<int32_t> block_cols;  // `blocks` per block row, sorted
  block_cols.reserve(static_cast<size_t>(nb) * blocks);
  std::vector<int32_t> picked, scratch;
  int64_t nnz = 0;
  for (int32_t br = 0; br < nb; ++br) {
    int32_t lo = std::max(0, br - half), hi = std::min(nb - 1, br + half);
    if (hi - lo + 1 < blocks) {
      if (lo == 0)
        hi = blocks - 1;
      else
        lo = nb - blocks;
    }
    sample_distinct(rng, hi - lo, blocks - 1, picked, scratch);  // window minus the diagonal
    const auto first = block_cols.size();
    for (int32_t p : picked) block_cols.push_back(lo + p >= br ? lo + p + 1 : lo + p);
    block_cols.push_back(br);
    std::sort(block_cols.begin() + static_cast<std::ptrdiff_t>(first), block_cols.end());
    int64_t row_len = 0;
    for (auto it = block_cols.begin() + static_cast<std::ptrdiff_t>(first); it != block_cols.end(); ++it)
      row_len += width(*it);
    nnz += row_len * width(br);
  }
  if (nnz > kMaxNnz) throw InputError(spec, 0, fmt::format("at most 2^31-1 nonzeros, but this would have {}", nnz));
  CsrBuilder b(nodes, nodes, nnz);
  for (int32_t br = 0; br < nb; ++br) {
    const int32_t* bc = block_cols.data() + static_cast<size_t>(br) * blocks;
    for (int32_t r = 0; r < width(br); ++r) {
      for (int32_t j = 0; j < blocks; ++j)
        for (int32_t c = bc[j] * k; c < bc[j] * k + width(bc[j]); ++c) b.push(c, to_value(rng()));
      b.end_row();
    }
  }
  return std::move(b.m);
}

CsrMatrix<double> banded(int32_t n, int32_t bw) {
  std::mt19937_64 rng(1);  // banded has no seed parameter; its values need only be fixed
  const int64_t nnz = int64_t{n} * (2 * int64_t{bw} + 1) - int64_t{bw} * (bw + 1);
  CsrBuilder b(n, n, nnz);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t hi = static_cast<int32_t>(std::min<int64_t>(n - 1, int64_t{i} + bw));
    for (int32_t j = std::max(0, i - bw); j <= hi; ++j) b.push(j, to_value(rng()));
    b.end_row();
  }
  return std::move(b.m);
}

CsrMatrix<double> uniform(int32_t n, int32_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrBuilder b(n, n, int64_t{n} * d);
  std::vector<int32_t> picked, scratch;
  for (int32_t i = 0; i < n; ++i) {
    sample_distinct(rng, n, d, picked, scratch);
    for (int32_t c : picked) b.push(c, to_value(rng()));
    b.end_row();
  }
  return std::move(b.m);
}

// A seeded random permutation of [0, n) (Fisher-Yates), for relabelling vertices.
static std::vector<int32_t> vertex_permutation(int32_t n, uint64_t seed) {
  std::vector<int32_t> perm(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) perm[v] = v;
  std::mt19937_64 prng(seed ^ 0x9e3779b97f4a7c15ull);
  for (int32_t v = n - 1; v > 0; --v)
    std::swap(perm[v], perm[static_cast<int32_t>(prng() % static_cast<uint64_t>(v + 1))]);
  return perm;
}

// An undirected edge list as a symmetric CSR matrix: self loops and duplicates dropped, columns
// sorted, and values that hash the unordered pair (salted), so that A(i, j) == A(j, i): symmetric,
// not only in pattern. Two counting sorts instead of a sort per row: the first buckets both
// directions of each edge by row; walking those rows in order and bucketing again by column leaves
// every row's columns sorted (the pattern is symmetric, so the second pass rebuilds the same rows).
// src and dst are consumed.
static CsrMatrix<double> symmetric_from_edges(int32_t n, std::vector<int32_t>& src, std::vector<int32_t>& dst,
                                              uint64_t salt) {
  const auto edges = static_cast<int64_t>(src.size());
  std::vector<int32_t> ptr(static_cast<size_t>(n) + 1, 0);
  for (int64_t e = 0; e < edges; ++e) {
    if (src[e] == dst[e]) continue;
    ++ptr[src[e] + 1];
    ++ptr[dst[e] + 1];
  }
  for (int32_t i = 0; i < n; ++i) ptr[i + 1] += ptr[i];
  std::vector<int32_t> unsorted(static_cast<size_t>(ptr[n]));
  std::vector<int32_t> fill(ptr.begin(), ptr.end() - 1);
  for (int64_t e = 0; e < edges; ++e) {
    if (src[e] == dst[e]) continue;
    unsorted[fill[src[e]]++] = dst[e];
    unsorted[fill[dst[e]]++] = src[e];
  }
  src = {};
  dst = {};
  std::vector<int32_t> cols(unsorted.size());
  std::copy(ptr.begin(), ptr.end() - 1, fill.begin());
  for (int32_t i = 0; i < n; ++i)
    for (int32_t p = ptr[i]; p < ptr[i + 1]; ++p) cols[fill[unsorted[p]]++] = i;
  unsorted = {};
  CsrMatrix<double> m;
  m.rows = m.cols = n;
  m.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
  int32_t out = 0;
  for (int32_t i = 0; i < n; ++i) {
    const auto begin = cols.begin() + ptr[i];
    const auto end = std::unique(begin, cols.begin() + ptr[i + 1]);
    if (out != ptr[i]) std::copy(begin, end, cols.begin() + out);
    out += static_cast<int32_t>(end - begin);
    m.row_ptr[i + 1] = out;
  }
  cols.resize(static_cast<size_t>(out));
  cols.shrink_to_fit();
  m.col_idx = std::move(cols);
  m.values.resize(static_cast<size_t>(out));
  for (int32_t i = 0; i < n; ++i)
    for (int32_t p = m.row_ptr[i]; p < m.row_ptr[i + 1]; ++p) {
      const auto lo = static_cast<uint64_t>(std::min(i, m.col_idx[p]));
      const auto hi = static_cast<uint64_t>(std::max(i, m.col_idx[p]));
      m.values[p] = to_value(mix64(salt ^ (lo << 32 | hi)));
    }
  return m;
}

CsrMatrix<double> rmat(int scale, int32_t ef, uint64_t seed, bool scramble) {
  std::mt19937_64 rng(seed);
  const int32_t n = static_cast<int32_t>(int64_t{1} << scale);
  const int64_t edges = int64_t{ef} << scale;
  // Quadrant thresholds out of 2^16 for A = 0.57, B = C = 0.19 (D = 0.05); one 64-bit draw serves
  // four levels of the recursion, and a table turns 16 bits into (row bit, column bit).
  constexpr uint32_t kA = 37356, kAB = 49807, kABC = 62259;
  std::vector<uint8_t> quadrant(1 << 16);
  for (uint32_t u = 0; u < quadrant.size(); ++u)
    quadrant[u] = static_cast<uint8_t>((u >= kAB) << 1 | ((u >= kA) ^ (u >= kAB) ^ (u >= kABC)));
  // The edge list, then (symmetric_from_edges or the CSR build) twice as many entries.
  require_host_bytes(8.0 * double(edges) + 4.0 * (double(n) + 1) + 2 * 12.0 * double(edges),
                     fmt::format("an R-MAT graph of {} vertices and {} edges", n, edges));
  std::vector<int32_t> src(static_cast<size_t>(edges)), dst(static_cast<size_t>(edges));
  for (int64_t e = 0; e < edges; ++e) {
    uint32_t r = 0, c = 0;
    for (int level = 0; level < scale; level += 4) {
      uint64_t bits = rng();
      const int levels = std::min(4, scale - level);
      for (int j = 0; j < levels; ++j, bits >>= 16) {
        const uint32_t q = quadrant[bits & 0xffff];
        r = r << 1 | q >> 1;
        c = c << 1 | (q & 1);
      }
    }
    src[e] = static_cast<int32_t>(r);
    dst[e] = static_cast<int32_t>(c);
  }
  if (scramble) {  // Graph500's vertex relabelling: one seeded permutation for both ends
    const std::vector<int32_t> perm = vertex_permutation(n, seed);
    for (int64_t e = 0; e < edges; ++e) {
      src[e] = perm[src[e]];
      dst[e] = perm[dst[e]];
    }
  }
  return symmetric_from_edges(n, src, dst, mix64(seed));
}

CsrMatrix<double> powerlaw(int32_t n, double avg, double alpha, int32_t max, uint64_t seed, const std::string& spec) {
  std::mt19937_64 rng(seed);
  // Pareto with tail exponent alpha and scale xm has mean xm*alpha/(alpha-1); pick xm for `avg`.
  const double xm = avg * (alpha - 1) / alpha;
  std::vector<int32_t> len(static_cast<size_t>(n));
  int64_t nnz = 0;
  for (auto& l : len) {
    const double x = xm * det_exp(-det_log(to_unit_open(rng())) / alpha);
    l = static_cast<int32_t>(std::clamp(std::floor(x + 0.5), 1.0, static_cast<double>(max)));
    nnz += l;
  }
  if (nnz > kMaxNnz) throw InputError(spec, 0, fmt::format("at most 2^31-1 nonzeros, but this would have {}", nnz));
  CsrBuilder b(n, n, nnz);
  std::vector<int32_t> picked, scratch;
  for (int32_t i = 0; i < n; ++i) {
    sample_distinct(rng, n, len[i], picked, scratch);
    for (int32_t c : picked) b.push(c, to_value(rng()));
    b.end_row();
  }
  return std::move(b.m);
}

// A road network after SuiteSparse's roadNet-TX (1.39M vertices, 2.8 entries a row, at most 12):
// vertices on a grid w = ceil(sqrt(n)) wide, row-major (the last grid row partial). Each grid edge
// is kept with chance 0.6 (blocks without a road between them); each grid cell gets one of its two
// diagonals with chance 0.18, so the grid part stays planar (no two of its edges cross); and one
// vertex in 128 is an interchange with 2 to 5 links to vertices at most 3 grid steps away (the
// ramps and overpasses that make real road graphs slightly non-planar, and their longest rows).
// Symmetric, no self loops; vertices left without an edge stay, as empty rows.
CsrMatrix<double> roadnet(int32_t n, uint64_t seed, const std::string& spec) {
  std::mt19937_64 rng(seed);
  int64_t w = 1;
  while (w * w < n) ++w;
  constexpr uint64_t kKeep = static_cast<uint64_t>(0.6 * 0x1.0p64);
  constexpr uint64_t kDiagonal = static_cast<uint64_t>(0.18 * 0x1.0p64);
  constexpr uint64_t kInterchange = uint64_t{1} << 57;  // 1 in 128
  std::vector<int32_t> src, dst;
  src.reserve(static_cast<size_t>(n) * 3 / 2);
  dst.reserve(static_cast<size_t>(n) * 3 / 2);
  auto link = [&](int64_t u, int64_t v) {
    src.push_back(static_cast<int32_t>(u));
    dst.push_back(static_cast<int32_t>(v));
  };
  for (int64_t v = 0; v < n; ++v) {
    const int64_t x = v % w, y = v / w;
    if (x + 1 < w && v + 1 < n && rng() < kKeep) link(v, v + 1);
    if (v + w < n && rng() < kKeep) link(v, v + w);
    if (x + 1 < w && v + w + 1 < n && rng() < kDiagonal) {
      if (rng() & 1)
        link(v, v + w + 1);
      else
        link(v + 1, v + w);
    }
    if (rng() < kInterchange) {
      const int links = 2 + below(rng, 4);
      for (int l = 0; l < links; ++l) {
        const int64_t xx = x + below(rng, 7) - 3, yy = y + below(rng, 7) - 3, u = yy * w + xx;
        if (xx >= 0 && xx < w && yy >= 0 && u < n && u != v) link(v, u);
      }
    }
  }
  const auto edges = static_cast<int64_t>(src.size());
  if (2 * edges > kMaxNnz)
    throw InputError(spec, 0, fmt::format("at most 2^31-1 nonzeros, but this would have up to {}", 2 * edges));
  return symmetric_from_edges(n, src, dst, mix64(seed ^ 0x726f61646e6574ULL));
}

// Calls take(j) for each j in [lo, hi) kept independently with chance p, drawing one number per
// kept j (plus one) instead of one per j: the gap to the next kept j is geometric, floor(log u /
// log(1 - p)), so a sparse range costs its kept entries, not its length. log_q = det_log(1 - p).
template <class F>
static void bernoulli_run(std::mt19937_64& rng, int64_t lo, int64_t hi, double p, double log_q, F&& take) {
  if (!(p > 0) || lo >= hi) return;
  if (p >= 1) {
    for (int64_t j = lo; j < hi; ++j) take(j);
    return;
  }
  if (!(log_q < 0)) return;  // 1 - p rounded to 1: p below 2^-53, nothing would be kept in practice
  int64_t j = lo - 1;
  for (;;) {
    const double gap = std::floor(det_log(to_unit_open(rng())) / log_q);  // >= 0
    if (gap >= static_cast<double>(hi - 1 - j)) return;
    j += 1 + static_cast<int64_t>(gap);
    take(j);
  }
}

// A stochastic block model: k communities of consecutive vertex ids (sizes n / k, the first n % k
// one larger), each pair of vertices linked with chance p_in inside a community and p_out between
// communities, independently. Symmetric, no self loops; scramble relabels the vertices as rmat's.
CsrMatrix<double> community(int32_t n, int32_t k, double p_in, double p_out, uint64_t seed, bool scramble,
                            const std::string& spec) {
  // The expected edge count and memory, before any work: a spec of 2e9 vertices took 100 s to run
  // into the limit it could have been refused by.
  const int64_t q = n / k, extra = n % k;
  const double within =
      double(k - extra) * double(q) * double(q - 1) / 2 + double(extra) * double(q + 1) * double(q) / 2;
  const double edges = within * p_in + (double(n) * double(n - 1) / 2 - within) * p_out;
  if (2 * edges > double(kMaxNnz))
    throw InputError(spec, 0, fmt::format("at most 2^31-1 nonzeros, but about {:.3g} are expected", 2 * edges));
  require_host_bytes(8.0 * edges + 4.0 * (double(n) + 1) * (scramble ? 8 : 7) + 2 * 12.0 * edges, spec);
  std::mt19937_64 rng(seed);
  const double log_in = p_in < 1 ? det_log(1 - p_in) : 0.0;
  const double log_out = p_out < 1 ? det_log(1 - p_out) : 0.0;
  std::vector<int32_t> src, dst;
  int64_t end = 0;  // one past the last vertex of the current vertex's community
  int64_t c = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (i == end) end += q + (++c < extra ? 1 : 0);
    // Pairs (i, j) with j > i only, each drawn once: inside the community, then the rest.
    auto take = [&](int64_t j) {
      src.push_back(static_cast<int32_t>(i));
      dst.push_back(static_cast<int32_t>(j));
    };
    bernoulli_run(rng, i + 1, end, p_in, log_in, take);
    bernoulli_run(rng, end, n, p_out, log_out, take);
    if (2 * static_cast<int64_t>(src.size()) > kMaxNnz)
      throw InputError(spec, 0,
                       fmt::format("at most 2^31-1 nonzeros, but this has more after {} of {} rows", i + 1, n));
  }
  if (scramble) {
    const std::vector<int32_t> perm = vertex_permutation(n, seed);
    for (size_t e = 0; e < src.size(); ++e) {
      src[e] = perm[src[e]];
      dst[e] = perm[dst[e]];
    }
  }
  return symmetric_from_edges(n, src, dst, mix64(seed ^ 0x636f6d6dULL));
}

// A dense rows x cols weight matrix of normal(0, 1) values pruned by magnitude: in each row the
// round(density * cols) entries of largest |w| (ties to the lower column), or with block > 1 in
// each block row of block x block tiles the round(density * cols / block) tiles of largest sum |w|.
// The weights are drawn row by row in the same order for every block size, so one seed gives one
// dense matrix pruned in different ways. Normals by Marsaglia's polar method with det_log and
// sqrt (exactly rounded): the same bits on every machine.
CsrMatrix<double> pruned(int32_t rows, int32_t cols, double density, int32_t block, uint64_t seed) {
  std::mt19937_64 rng(seed);
  bool have_spare = false;
  double spare = 0;
  auto normal = [&]() -> double {
    if (have_spare) {
      have_spare = false;
      return spare;
    }
    for (;;) {
      const double u0 = 2 * to_unit_open(rng()), v0 = 2 * to_unit_open(rng());
      const double u = u0 - 1, v = v0 - 1;  // never 0: to_unit_open is never 1/2
      const double uu = u * u, vv = v * v;
      const double s = uu + vv;
      if (s >= 1) continue;
      const double f = std::sqrt(-2 * det_log(s) / s);
      spare = v * f;
      have_spare = true;
      return u * f;
    }
  };
  const int32_t tiles = cols / block;   // generators.cpp checks that block divides rows and cols
  const double want = density * tiles;  // a statement of its own: no FMA with the + 0.5
  const auto keep = static_cast<int32_t>(std::clamp<double>(std::floor(want + 0.5), 1, static_cast<double>(tiles)));
  CsrBuilder b(rows, cols, int64_t{rows} * keep * block);
  std::vector<double> w(static_cast<size_t>(block) * static_cast<size_t>(cols));
  std::vector<double> score(static_cast<size_t>(tiles));
  std::vector<int32_t> order(static_cast<size_t>(tiles));
  for (int32_t r0 = 0; r0 < rows; r0 += block) {
    for (auto& x : w) x = normal();
    for (int32_t t = 0; t < tiles; ++t) {
      double sum = 0;
      for (int32_t r = 0; r < block; ++r)
        for (int32_t c = 0; c < block; ++c) sum += std::fabs(w[static_cast<size_t>(r) * cols + t * block + c]);
      score[t] = sum;
    }
    for (int32_t t = 0; t < tiles; ++t) order[t] = t;
    std::nth_element(order.begin(), order.begin() + keep, order.end(),
                     [&](int32_t x, int32_t y) { return score[x] > score[y] || (score[x] == score[y] && x < y); });
    std::sort(order.begin(), order.begin() + keep);
    for (int32_t r = 0; r < block; ++r) {
      for (int32_t i = 0; i < keep; ++i)
        for (int32_t c = 0; c < block; ++c) {
          const int32_t col = order[i] * block + c;
          b.push(col, w[static_cast<size_t>(r) * cols + col]);
        }
      b.end_row();
    }
  }
  return std::move(b.m);
}

}  // namespace dbsparse::gen
