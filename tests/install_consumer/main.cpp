// Uses a little of each part of the static library that pulls in a link-only dependency, so a
// missing one fails the link here rather than in a user's project: generators and the CPU
// reference, Matrix Market I/O (zlib), the tuning database (SQLite), the driver probe (dl).
// Needs no GPU. Prints "consumer ok" when every result is the expected one.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "dbsparse/dbsparse.hpp"

namespace fs = std::filesystem;

int main() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };

  // y = A*1 for the 5-point Laplacian on a 4x4 grid: 4 on the diagonal, -1 per neighbour, so each
  // row sums to its number of missing neighbours and the whole to 4n = 16.
  auto a = dbsparse::generate(dbsparse::parse_generator_spec("stencil2d:n=4"));
  std::vector<double> ones(static_cast<size_t>(a.cols), 1.0);
  auto y = dbsparse::reference::spmv(a, std::span<const double>(ones));
  double sum = 0;
  for (double v : y) sum += v;
  std::printf("stencil2d:n=4: %d x %d, nnz %lld, sum(A*1) = %g\n", a.rows, a.cols, static_cast<long long>(a.nnz()),
              sum);
  expect(a.rows == 16 && a.nnz() == 64, "stencil2d:n=4 has 16 rows and 64 nonzeros");
  expect(sum == 16.0, "sum(A*1) == 16");

  // [[1 2] [0 3]] * [1 1] = [3 3], built by hand from triplets.
  dbsparse::CooMatrix<double> coo;
  coo.rows = coo.cols = 2;
  coo.row = {0, 0, 1};
  coo.col = {0, 1, 1};
  coo.values = {1, 2, 3};
  auto small = dbsparse::coo_to_csr(coo);
  std::vector<double> x{1, 1};
  auto ys = dbsparse::reference::spmv(small, std::span<const double>(x));
  expect(ys == std::vector<double>{3, 3}, "[[1 2] [0 3]] * [1 1] == [3 3]");

  const fs::path dir = fs::temp_directory_path() / ("dbsparse-consumer-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string mtx = (dir / "small.mtx").string();
  dbsparse::write_matrix_market(mtx, small);
  auto back = dbsparse::read_matrix_market(mtx);
  expect(back.col_idx == small.col_idx && back.values == small.values, "Matrix Market round trip");

  auto db = dbsparse::TuningDb::open((dir / "tuning.db").string());
  expect(db->schema_version() == dbsparse::TuningDb::kSchemaVersion, "a new tuning DB has the current schema");
  db.reset();
  fs::remove_all(dir);

  std::string why;
  const bool gpu = dbsparse::cuda_device_available(&why);
  std::printf("CUDA device: %s\n", gpu ? "yes" : why.c_str());

  if (failures) return 1;
  std::printf("consumer ok (dbsparse %s)\n", DBSPARSE_VERSION);
  return 0;
}
