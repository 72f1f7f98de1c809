// Matrix Market reader and writer, and load_matrix (a path or a generator string).
// The reader is a hand-written line parser over a large buffer: files reach ~100 MB, and iostreams
// per token would dominate the load time.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "dbsparse/error.hpp"
#include "dbsparse/generators.hpp"
#include "dbsparse/io.hpp"
#include "support/atomic_file.hpp"
#include "support/host_memory.hpp"

namespace dbsparse {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// Plain or gzip bytes. Gzip is recognised by its magic bytes, so the name need not end in .gz.
// Gzip is inflated here from the open FILE (zlib's gzopen would reopen the path: a pipe or a
// process substitution has then lost the two bytes read to sniff it), member after member as
// gzip(1) reads them; bytes after the last member that do not start another are an error, where
// gzread ignored them silently.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw InputError(path, 0, "a readable file");
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) throw InputError(path, 0, "a readable file");
    unsigned char magic[2] = {0, 0};
    const size_t got = std::fread(magic, 1, 2, file_);
    // The two bytes read are served first, not rewound: a pipe cannot seek.
    pending_.assign(reinterpret_cast<const char*>(magic), got);
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      gzip_ = true;
      in_.resize(size_t{1} << 20);
      if (inflateInit2(&zs_, 15 + 16) != Z_OK) throw InputError(path, 0, "memory for a gzip stream");
      zs_live_ = true;
    }
  }
  const std::string& path() const { return path_; }
  ~ByteSource() {
    if (zs_live_) inflateEnd(&zs_);
    if (file_) std::fclose(file_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool is_gzip() const { return gzip_; }

  // Returns 0 at the end; throws on a read error or a corrupt, truncated or trailed gzip stream.
  size_t read(char* dst, size_t n, long line) {
    if (gzip_) return inflate_into(dst, n, line);
    return raw(dst, n, line);
  }

 private:
  size_t raw(char* dst, size_t n, long line) {
    size_t from_pending = 0;
    if (!pending_.empty() && n > 0) {
      from_pending = std::min(n, pending_.size());
      std::memcpy(dst, pending_.data(), from_pending);
      pending_.erase(0, from_pending);
      if (from_pending == n) return n;
    }
    size_t got = std::fread(dst + from_pending, 1, n - from_pending, file_);
    if (got == 0 && std::ferror(file_)) throw InputError(path_, line, "a readable file");
    return from_pending + got;
  }
  // More compressed input into in_; false at the end of the file.
  bool refill(long line) {
    const size_t got = raw(in_.data(), in_.size(), line);
    zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
    zs_.avail_in = static_cast<uInt>(got);
    return got > 0;
  }
  size_t inflate_into(char* dst, size_t n, long line) {
    if (n == 0) return 0;  // the loop below waits for output
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt want = zs_.avail_out;
    while (zs_.avail_out == want && !done_) {
      if (zs_.avail_in == 0 && !refill(line)) {
        if (in_member_) throw InputError(path_, line, "a complete gzip stream (the file is truncated)");
        done_ = true;
        break;
      }
      if (!in_member_) {
        // Past a member's end: another member, or the end of the file; anything else is trailing
        // bytes (two bytes may straddle a refill: compare what there is).
        const unsigned char c0 = zs_.next_in[0];
        unsigned char c1 = 0x8b;
        if (zs_.avail_in > 1) c1 = zs_.next_in[1];
        if (c0 != 0x1f || c1 != 0x8b)
          throw InputError(path_, line, "nothing after the gzip stream (trailing bytes follow its end)");
        inflateReset(&zs_);
        in_member_ = true;
      }
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc == Z_MEM_ERROR) {
        throw InputError(path_, line, "memory for a gzip stream");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw InputError(path_, line, "an uncorrupted gzip stream");
      }
    }
    return want - zs_.avail_out;
  }

  std::string path_;
  std::string pending_;  // bytes read to sniff the format, not yet handed out
  FILE* file_ = nullptr;
  bool gzip_ = false, zs_live_ = false, in_member_ = true, done_ = false;
  z_stream zs_{};
  std::vector<char> in_;
};

// Yields physical lines (without "\n" or "\r\n") from a refillable buffer; a line longer than
// the buffer grows it, up to kMaxLineBytes (a Matrix Market line is a few dozen bytes; /dev/zero
// would grow the buffer until the host ran out).
constexpr size_t kMaxLineBytes = size_t{64} << 20;
class LineReader {
 public:
  explicit LineReader(ByteSource& src) : src_(src), buf_(4 << 20) {}

  bool next(std::string_view& line) {
    for (;;) {
      const char* base = buf_.data();
      if (const void* nl = std::memchr(base + begin_, '\n', end_ - begin_)) {
        size_t pos = static_cast<const char*>(nl) - base;
        line = trim_cr(std::string_view(base + begin_, pos - begin_));
        begin_ = pos + 1;
        ++number_;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        line = trim_cr(std::string_view(base + begin_, end_ - begin_));
        begin_ = end_;
        ++number_;
        return true;
      }
      refill();
    }
  }
  long number() const { return number_; }

 private:
  static std::string_view trim_cr(std::string_view s) {
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
  }
  void refill() {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buf_.size()) {
      if (buf_.size() >= kMaxLineBytes)
        throw InputError(src_.path(), number_ + 1, fmt::format("a line of at most {} MiB", kMaxLineBytes >> 20));
      buf_.resize(buf_.size() * 2);
    }
    size_t got = src_.read(buf_.data() + end_, buf_.size() - end_, number_ + 1);
    if (got == 0) eof_ = true;
    end_ += got;
  }

  ByteSource& src_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  long number_ = 0;
  bool eof_ = false;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

// Cuts the next whitespace-separated token off the front of s; empty when none is left.
std::string_view next_token(std::string_view& s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  size_t j = i;
  while (j < s.size() && !is_space(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return is_space(c); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

enum class Parse { ok, bad, out_of_range };

Parse parse_int(std::string_view tok, int64_t& out) {
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  if (ec == std::errc::result_out_of_range && p == tok.data() + tok.size()) return Parse::out_of_range;
  return ec == std::errc() && p == tok.data() + tok.size() && !tok.empty() ? Parse::ok : Parse::bad;
}

// A finite double. from_chars rejects a leading '+' (which some writers emit) and reports
// underflow as out of range, where strtod gives the nearest subnormal or zero.
bool parse_finite(std::string_view tok, double& out) {
  if (tok.size() > 1 && tok[0] == '+' && tok[1] != '-' && tok[1] != '+') tok.remove_prefix(1);
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
  if (p != tok.data() + tok.size() || tok.empty()) return false;
  if (ec == std::errc::result_out_of_range) {
    std::string copy(tok);
    out = std::strtod(copy.c_str(), nullptr);
  } else if (ec != std::errc()) {
    return false;
  }
  return std::isfinite(out);
}

enum class Field { real, integer, pattern };
enum class Symmetry { general, symmetric, skew };

struct Header {
  Field field;
  Symmetry symmetry;
};

Header parse_banner(const std::string& path, LineReader& in) {
  const std::string banner =
      "a banner '%%MatrixMarket matrix coordinate <real|integer|pattern> "
      "<general|symmetric|skew-symmetric>'";
  std::string_view line;
  if (!in.next(line)) throw InputError(path, 1, banner);
  // A UTF-8 byte order mark (some editors write one) is not part of the banner.
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
  if (is_blank(line)) throw InputError(path, 1, banner + " on the first line, found an empty line before it");
  std::string_view rest = line;
  if (lower(next_token(rest)) != "%%matrixmarket") throw InputError(path, 1, banner);
  std::string object = lower(next_token(rest)), format = lower(next_token(rest));
  std::string field = lower(next_token(rest)), symmetry = lower(next_token(rest));
  if (object != "matrix") throw InputError(path, 1, "object 'matrix' in the banner, got '" + object + "'");
  if (format == "array") throw InputError(path, 1, "'coordinate' format ('array' is not supported)");
  if (format != "coordinate") throw InputError(path, 1, "'coordinate' format, got '" + format + "'");
  if (!is_blank(rest)) throw InputError(path, 1, banner);

  Header h{};
  if (field == "real")
    h.field = Field::real;
  else if (field == "integer")
    h.field = Field::integer;
  else if (field == "pattern")
    h.field = Field::pattern;
  else if (field == "complex")
    throw InputError(path, 1, "field real, integer or pattern ('complex' is not supported)");
  else
    throw InputError(path, 1, "field real, integer or pattern, got '" + field + "'");

  if (symmetry == "general")
    h.symmetry = Symmetry::general;
  else if (symmetry == "symmetric")
    h.symmetry = Symmetry::symmetric;
  else if (symmetry == "skew-symmetric")
    h.symmetry = Symmetry::skew;
  else if (symmetry == "hermitian")
    throw InputError(path, 1, "symmetry general, symmetric or skew-symmetric ('hermitian' is not supported)");
  else
    throw InputError(path, 1, "symmetry general, symmetric or skew-symmetric, got '" + symmetry + "'");

  // A skew-symmetric pattern has no values to negate; the Matrix Market spec does not allow it.
  if (h.field == Field::pattern && h.symmetry == Symmetry::skew)
    throw InputError(path, 1, "a field with values for skew-symmetric (pattern skew-symmetric is not valid)");
  return h;
}

bool is_comment_or_blank(std::string_view line) { return (!line.empty() && line[0] == '%') || is_blank(line); }

struct Size {
  int64_t rows, cols, entries;
};

Size parse_size_line(const std::string& path, LineReader& in, const Header& h) {
  std::string_view line;
  do {
    if (!in.next(line)) throw InputError(path, in.number() + 1, "a size line 'rows cols entries'");
  } while (is_comment_or_blank(line));
  const long ln = in.number();
  int64_t v[3];
  for (int64_t& x : v) {
    Parse r = parse_int(next_token(line), x);
    if (r == Parse::out_of_range) x = std::numeric_limits<int64_t>::max();
    if (r == Parse::bad) throw InputError(path, ln, "a size line 'rows cols entries' of three integers");
  }
  if (!is_blank(line)) throw InputError(path, ln, "a size line 'rows cols entries' of three integers");
  if (v[0] < 0 || v[1] < 0 || v[2] < 0) throw InputError(path, ln, "non-negative sizes in the size line");
  if (v[0] > kInt32Max || v[1] > kInt32Max)
    throw InputError(path, ln, fmt::format("rows and cols of at most {}", kInt32Max));
  if (v[2] > kInt32Max) throw InputError(path, ln, fmt::format("at most {} entries", kInt32Max));
  if (h.symmetry != Symmetry::general && v[0] != v[1])
    throw InputError(path, ln, "a square matrix for a symmetric or skew-symmetric file");
  return {v[0], v[1], v[2]};
}

struct Entry {
  int32_t row, col;  // 0-based
  double value;
};

Entry parse_entry(const std::string& path, long ln, std::string_view line, const Header& h, const Size& size) {
  const bool pattern = h.field == Field::pattern;
  std::string_view tok[3] = {next_token(line), next_token(line), pattern ? std::string_view() : next_token(line)};
  if (tok[1].empty() || (!pattern && tok[2].empty()) || !is_blank(line))
    throw InputError(path, ln,
                     pattern ? "a data line 'row col' (2 numbers; a pattern file has no values)"
                             : "a data line 'row col value' (3 numbers)");
  int64_t idx[2];
  for (int k = 0; k < 2; ++k) {
    const char* what = k ? "column" : "row";
    const int64_t hi = k ? size.cols : size.rows;
    Parse r = parse_int(tok[k], idx[k]);
    if (r == Parse::bad) throw InputError(path, ln, fmt::format("an integer {} index, got '{}'", what, tok[k]));
    if (r == Parse::out_of_range || idx[k] < 1 || idx[k] > hi)
      throw InputError(path, ln, fmt::format("a {} index in 1..{}, got {}", what, hi, tok[k]));
  }
  double v = 1.0;
  if (h.field == Field::integer) {
    int64_t iv;
    if (parse_int(tok[2], iv) != Parse::ok)
      throw InputError(path, ln, fmt::format("an integer value, got '{}'", tok[2]));
    v = static_cast<double>(iv);
  } else if (h.field == Field::real && !parse_finite(tok[2], v)) {
    throw InputError(path, ln, fmt::format("a finite value, got '{}'", tok[2]));
  }
  return {static_cast<int32_t>(idx[0] - 1), static_cast<int32_t>(idx[1] - 1), v};
}

}  // namespace

CsrMatrix<double> read_matrix_market(const std::string& path) {
  ByteSource src(path);
  LineReader in(src);
  const Header h = parse_banner(path, in);
  const Size size = parse_size_line(path, in, h);
  const long size_line = in.number();
  // The shape alone can ask for more than the host has (row and column pointers while converting):
  // say so now, not after minutes of paging.
  try {
    require_host_bytes(4.0 * (double(size.rows) + 1) + 8.0 * (double(size.cols) + 1),
                       fmt::format("the row pointers of a {} x {} matrix (and its column pointers while converting)",
                                   size.rows, size.cols));
  } catch (const HostMemoryError& e) {
    throw InputError(path, size_line, fmt::format("a shape this host can hold ({})", e.what()));
  }

  CooMatrix<double> coo;
  coo.rows = static_cast<int32_t>(size.rows);
  coo.cols = static_cast<int32_t>(size.cols);
  // The header's count may be a lie, so reserve no more than the file could hold: a plain file
  // needs at least 4 bytes an entry.
  int64_t reserve = size.entries;
  std::error_code ec;
  auto bytes = fs::file_size(path, ec);
  if (src.is_gzip() || ec)
    reserve = std::min<int64_t>(reserve, int64_t{1} << 26);
  else
    reserve = std::min<int64_t>(reserve, static_cast<int64_t>(bytes / 4) + 1);
  if (h.symmetry != Symmetry::general) reserve *= 2;
  coo.row.reserve(reserve);
  coo.col.reserve(reserve);
  coo.values.reserve(reserve);

  int64_t count = 0;
  // A symmetric file stores one triangle. Entries on both sides are read, but an entry and its
  // mirror both given would be summed without a word: checked once both sides are seen.
  bool below = false, above = false;
  int64_t above_count = 0;
  std::vector<uint64_t> offdiag;  // (min, max, side) of each off-diagonal entry
  std::string_view line;
  // A gzip bomb can declare and hold 2^31 - 1 real entries: when the host runs out, say which file.
  try {
    while (in.next(line)) {
      if (is_comment_or_blank(line)) continue;
      const long ln = in.number();
      if (count == size.entries)
        throw InputError(path, ln, fmt::format("no more than the {} entries the size line declares", size.entries));
      const Entry e = parse_entry(path, ln, line, h, size);
      if (h.symmetry != Symmetry::general && e.row != e.col) {
        (e.row > e.col ? below : above) = true;
        above_count += e.row < e.col;
        const uint64_t lo = static_cast<uint64_t>(std::min(e.row, e.col)),
                       hi = static_cast<uint64_t>(std::max(e.row, e.col));
        offdiag.push_back(lo << 33 | hi << 1 | (e.row > e.col ? 1u : 0u));
      }
      coo.row.push_back(e.row);
      coo.col.push_back(e.col);
      coo.values.push_back(e.value);
      if (h.symmetry != Symmetry::general && e.row != e.col) {
        coo.row.push_back(e.col);
        coo.col.push_back(e.row);
        coo.values.push_back(h.symmetry == Symmetry::skew ? -e.value : e.value);
      } else if (h.symmetry == Symmetry::skew) {
        throw InputError(path, ln, "no diagonal entry in a skew-symmetric file");
      }
      ++count;
    }
  } catch (const std::bad_alloc&) {
    throw InputError(
        path, in.number(),
        fmt::format("no more entries than this host can hold ({} read of the {} declared)", count, size.entries));
  }
  if (count < size.entries)
    throw InputError(path, in.number(),
                     fmt::format("{} entries, but the file ends at line {} after {} of {} entries", size.entries,
                                 in.number(), count, size.entries));
  if (below && above) {
    std::sort(offdiag.begin(), offdiag.end());
    for (size_t k = 1; k < offdiag.size(); ++k)
      if ((offdiag[k] >> 1) == (offdiag[k - 1] >> 1) && (offdiag[k] & 1) != (offdiag[k - 1] & 1)) {
        const uint64_t lo = (offdiag[k] >> 33) + 1, hi = ((offdiag[k] >> 1) & 0xFFFFFFFFu) + 1;
        throw InputError(path, size_line,
                         fmt::format("one of ({}, {}) and ({}, {}) in a symmetric file: both are given, and each "
                                     "mirrors onto the other",
                                     lo, hi, hi, lo));
      }
  }
  offdiag = {};
  // The format stores the lower triangle; an upper one is read the same way (mirrored), as other
  // readers do, but said.
  if (above_count > 0)
    std::fprintf(stderr,
                 "dbsparse: warning: %s: %lld entries above the diagonal in a %s file (the format stores the lower "
                 "triangle); each is mirrored below it\n",
                 path.c_str(), static_cast<long long>(above_count),
                 h.symmetry == Symmetry::skew ? "skew-symmetric" : "symmetric");
  if (static_cast<int64_t>(coo.row.size()) > kInt32Max)
    throw InputError(path, size_line, fmt::format("at most {} entries after symmetric expansion", kInt32Max));
  try {
    return coo_to_csr(coo);
  } catch (const HostMemoryError& e) {
    throw InputError(path, size_line, fmt::format("a matrix this host can hold ({})", e.what()));
  } catch (const std::bad_alloc&) {
    // The entries fit (they were read), the declared shape's row pointers did not.
    throw InputError(path, size_line,
                     fmt::format("a shape this host can hold: {} x {} needs {:.1f} GB of row pointers", size.rows,
                                 size.cols, (static_cast<double>(size.rows) + 1) * 4 / 1e9));
  }
}

void write_matrix_market(const std::string& path, const CsrMatrix<double>& a, bool pattern) {
  validate(a);
  support::AtomicFile out{fs::path(path)};
  fmt::memory_buffer buf;
  auto flush = [&] {
    out.write(std::string_view(buf.data(), buf.size()));
    buf.clear();
  };
  fmt::format_to(std::back_inserter(buf), "%%MatrixMarket matrix coordinate {} general\n{} {} {}\n",
                 pattern ? "pattern" : "real", a.rows, a.cols, a.nnz());
  for (int32_t r = 0; r < a.rows; ++r) {
    for (int32_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
      if (pattern)
        fmt::format_to(std::back_inserter(buf), "{} {}\n", r + 1, a.col_idx[p] + 1);
      else
        fmt::format_to(std::back_inserter(buf), "{} {} {:.17g}\n", r + 1, a.col_idx[p] + 1, a.values[p]);
    }
    if (buf.size() > (1u << 20)) flush();
  }
  flush();
  out.commit();
}

bool is_generator_spec(const std::string& spec) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (std::isdigit(static_cast<unsigned char>(spec[0]))) return false;
  if (!std::all_of(spec.begin(), spec.begin() + colon, ident)) return false;
  std::error_code ec;
  return !fs::exists(spec, ec);
}

NamedMatrix load_matrix(const std::string& spec) {
  if (is_generator_spec(spec)) {
    GeneratorSpec g = parse_generator_spec(spec);
    try {
      return NamedMatrix{g.to_string(), generate(g)};
    } catch (const HostMemoryError& e) {  // checked before generating
      throw InputError(spec, 0, fmt::format("a generated matrix this host can hold ({})", e.what()));
    } catch (const std::bad_alloc&) {
      throw InputError(spec, 0, "a generated matrix this host can hold (it ran out of memory while generating)");
    }
  }
  std::string name = fs::path(spec).filename().string();
  if (name.ends_with(".mtx.gz"))
    name.resize(name.size() - 7);
  else if (name.ends_with(".mtx"))
    name.resize(name.size() - 4);
  else
    name = fs::path(spec).stem().string();
  NamedMatrix m{name, read_matrix_market(spec)};
  // The tools run in f32: say so when a value would become inf there (a file's own "inf" is
  // refused by the reader; an overflow would be silent).
  int64_t over = 0;
  for (double v : m.csr.values) over += std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max());
  if (over)
    std::fprintf(stderr, "dbsparse: warning: %s: %lld values exceed float32's range and become inf in f32 runs\n",
                 spec.c_str(), static_cast<long long>(over));
  return m;
}

}  // namespace dbsparse
