// 64-bit row offsets (plan_spmv / plan_spmm of a DeviceCsrView64): the kernels with long long
// offsets against the CPU reference, and an SpMV past 2^31 entries (about 17 GB on the device).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "gpu/gpu_support.hpp"

namespace {

template <class T>
double error64(const CsrMatrix<double>& ad, const Config* cfg, double alpha, double beta,
               std::string* explain = nullptr) {
  const CsrMatrix<T> a = ad.cast<T>();
  const DeviceCsr64<T> d(a);
  const auto plan = plan_spmv(ctx(), d.view(), cfg);
  if (explain) *explain = plan.explain();
  const auto x = dbs_test::random_vector<T>(a.cols, 3);
  const auto y0 = dbs_test::random_vector<T>(a.rows, 4);
  const auto ref = reference::spmv(a, std::span<const T>(x), alpha, beta, std::span<const T>(y0));
  Stream s(ctx());
  DeviceBuffer<T> dx{std::span<const T>(x)}, dy{std::span<const T>(y0)};
  plan.run(dx, dy, s, static_cast<T>(alpha), static_cast<T>(beta));
  s.synchronize();
  return reference::relative_error(std::span<const double>(ref), std::span<const T>(dy.download()));
}

double tol_f32(const CsrMatrix<double>& a) {
  int64_t longest = 0;
  for (int32_t r = 0; r < a.rows; ++r) longest = std::max<int64_t>(longest, a.row_ptr[r + 1] - a.row_ptr[r]);
  return std::max(1e-5, 4 * 0x1p-24 * std::sqrt(static_cast<double>(longest) / 4));
}

}  // namespace

TEST_CASE("SpmvOn64BitOffsetsMatchesReference") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  for (const char* spec : {"stencil2d:n=200", "powerlaw:n=20000,avg=40,alpha=1.5,max=15000", "rmat:scale=14,ef=8"})
    mats.emplace_back(spec, generate(spec));
  CsrMatrix<double> empty_rows;  // 5 x 3, rows 0 and 4 empty
  empty_rows.rows = 5;
  empty_rows.cols = 3;
  empty_rows.row_ptr = {0, 0, 2, 3, 3, 3};
  empty_rows.col_idx = {0, 2, 1};
  empty_rows.values = {1.5, -2.0, 0.25};
  mats.emplace_back("5 x 3 with empty rows", empty_rows);
  std::vector<std::optional<Config>> configs{std::nullopt};
  for (const char* strategy : {"uniform", "scalar", "block", "classified"}) {
    auto p = config_to_json(SpmvConfig{});
    p["strategy"] = strategy;
    configs.push_back(Config{"spmv", p, ConfigSource::Explicit, "test"});
  }
  for (int lanes : {2, 8, 32}) {
    auto p = config_to_json(SpmvConfig{});
    p["strategy"] = "vector";
    p["lanes"] = lanes;
    configs.push_back(Config{"spmv", p, ConfigSource::Explicit, "test"});
  }
  for (const auto& [name, a] : mats)
    for (const auto& cfg : configs) {
      CAPTURE(name);
      CAPTURE(cfg ? cfg->params.dump() : std::string("defaults"));
      const Config* c = cfg ? &*cfg : nullptr;
      std::string explain;
      CHECK(error64<float>(a, c, 1.5, 0.0, &explain) <= tol_f32(a));
      CHECK(explain.find(".o64") != std::string::npos);
      CHECK(error64<float>(a, c, -0.5, 0.75) <= tol_f32(a));
      CHECK(error64<double>(a, c, 2.0, -1.0) <= 1e-12);
    }
}

TEST_CASE("SpmvOn64BitOffsetsRefusesWhatItCannotRun") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  const auto a = generate("rmat:scale=10,ef=8").cast<float>();
  const DeviceCsr64<float> d(a);
  for (const char* bad : {R"({"strategy":"longrow"})", R"({"reorder":"degree"})"}) {
    CAPTURE(bad);
    const Config cfg{"spmv", nlohmann::json::parse(bad), ConfigSource::Explicit, "test"};
    CHECK_THROWS_AS(plan_spmv(ctx(), d.view(), &cfg), UsageError);
  }
  auto v = d.view();
  v.nnz = -1;
  CHECK_THROWS_WITH_AS(plan_spmv(ctx(), v), doctest::Contains("negative"), UsageError);
  v = d.view();
  v.col_idx = nullptr;
  CHECK_THROWS_WITH_AS(plan_spmv(ctx(), v), doctest::Contains("null"), UsageError);
}

// The caller's arrays are checked on the GPU before a plan reads them in place: broken offsets
// or columns are a UsageError naming the first bad row or entry, never an illegal address (which
// would end the CUDA context for the whole process). Then the context still works.
TEST_CASE("PlansOfA64BitDeviceCsrRefuseBrokenArraysAndTheContextStaysUsable") {
  (void)ctx();         // first: the uploads below need a current context (alone, nothing else made one)
  CsrMatrix<float> a;  // 4 x 5
  a.rows = 4;
  a.cols = 5;
  a.row_ptr = {0, 2, 3, 3, 6};
  a.col_idx = {0, 4, 2, 1, 3, 4};
  a.values = {1, 2, 3, 4, 5, 6};
  auto broken = [&](std::vector<int32_t> ptr, std::vector<int32_t> col, const char* says) {
    CsrMatrix<float> b = a;
    b.row_ptr = std::move(ptr);
    b.col_idx = std::move(col);
    const DeviceCsr64<float> d(b);
    CAPTURE(says);
    CHECK_THROWS_WITH_AS(plan_spmv(ctx(), d.view()), doctest::Contains(says), UsageError);
    CHECK_THROWS_WITH_AS(plan_spmm(ctx(), d.view(), 32), doctest::Contains(says), UsageError);
  };
  broken({0, 2, 1, 3, 6}, a.col_idx, "row_ptr is not a valid offset array at row 1");
  broken({0, 2, 3, 3, 7}, a.col_idx, "row_ptr[4] = 7");
  broken({1, 2, 3, 3, 6}, a.col_idx, "at row 0");
  broken(a.row_ptr, {0, 4, 2, 1, 5, 4}, "col_idx[4] = 5 is outside [0, 5)");
  broken(a.row_ptr, {0, -2, 2, 1, 3, 4}, "col_idx[1] = -2");
  // Unsorted columns are fine for SpMV and SpMM (only BFS needs them sorted).
  CsrMatrix<float> unsorted = a;
  unsorted.col_idx = {4, 0, 2, 4, 3, 1};
  const DeviceCsr64<float> du(unsorted);
  CHECK_NOTHROW(plan_spmv(ctx(), du.view()));
  CHECK(error64<float>(a.cast<double>(), nullptr, 1.0, 0.0) <= 1e-6);
}

// 2^22 rows of 513 entries: 2,151,677,952 entries, past what 32-bit offsets address. Every
// product and sum is a small multiple of 1/32, so each y entry is exact in f32 and must equal the
// reference bit for bit. Filled a block of rows at a time (the host never holds the matrix).
TEST_CASE("SpmvOn64BitOffsetsPast2To31EntriesMatchesReference") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  const int32_t rows = 1 << 22, cols = 1 << 20, len = 513;
  const int64_t nnz = int64_t{rows} * len;
  REQUIRE(nnz > int64_t{INT32_MAX});
  auto col_of = [&](int64_t r, int64_t k) { return static_cast<int32_t>((r * 37 + k * 8191) % cols); };
  auto val_of = [](int64_t r, int64_t k) { return 1.0f + static_cast<float>((r + k) % 7) * 0.125f; };
  std::vector<float> x(static_cast<size_t>(cols));
  for (int32_t c = 0; c < cols; ++c) x[static_cast<size_t>(c)] = static_cast<float>(c % 11) * 0.25f;
  std::vector<int64_t> ptr(static_cast<size_t>(rows) + 1);
  for (int64_t r = 0; r <= rows; ++r) ptr[static_cast<size_t>(r)] = r * len;
  DeviceBuffer<int64_t> d_ptr{std::span<const int64_t>(ptr)};
  DeviceAllocation d_col(static_cast<size_t>(nnz) * 4), d_val(static_cast<size_t>(nnz) * 4);
  const int32_t block = 1 << 16;
  std::vector<int32_t> hc(static_cast<size_t>(block) * len);
  std::vector<float> hv(hc.size());
  std::vector<float> want(static_cast<size_t>(rows));
  for (int32_t r0 = 0; r0 < rows; r0 += block) {
    for (int64_t r = r0; r < r0 + block; ++r) {
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        const size_t at = static_cast<size_t>((r - r0) * len + k);
        hc[at] = col_of(r, k);
        hv[at] = val_of(r, k);
        sum += static_cast<double>(hv[at]) * x[static_cast<size_t>(hc[at])];
      }
      want[static_cast<size_t>(r)] = static_cast<float>(sum);
    }
    const size_t offset = static_cast<size_t>(r0) * len * 4;
    d_col.upload(hc.data(), hc.size() * 4, offset);
    d_val.upload(hv.data(), hv.size() * 4, offset);
  }
  const DeviceCsrView64<float> view{rows,
                                    cols,
                                    nnz,
                                    d_ptr.data(),
                                    reinterpret_cast<const int32_t*>(d_col.ptr()),
                                    reinterpret_cast<const float*>(d_val.ptr())};
  const auto plan = plan_spmv(ctx(), view);
  CAPTURE(plan.explain());
  Stream s(ctx());
  DeviceBuffer<float> dx{std::span<const float>(x)}, dy(static_cast<size_t>(rows));
  dy.fill_bytes(0xFF);
  plan.run(dx, dy, s);
  s.synchronize();
  const auto got = dy.download();
  int64_t wrong = 0;
  for (size_t r = 0; r < got.size(); ++r) wrong += got[r] != want[r];
  CHECK(wrong == 0);
  CHECK(got.back() == want.back());  // the last row starts past 2^31
}

// SpMM C = alpha A B + beta C through a DeviceCsrView64, against the CPU reference: float4 and
// scalar lanes (n = 32, 33, 128), rows a warp picked by the plan or forced, alpha and beta.
TEST_CASE("SpmmOn64BitOffsetsMatchesReference") {
  (void)ctx();  // first: the uploads below need a current context (alone, nothing else made one)
  std::vector<std::pair<std::string, CsrMatrix<double>>> mats;
  for (const char* spec : {"uniform:n=100000,d=6", "powerlaw:n=20000,avg=8,alpha=1.5,max=4000", "rmat:scale=12,ef=8"})
    mats.emplace_back(spec, generate(spec));
  for (const auto& [name, ad] : mats) {
    const CsrMatrix<float> a = ad.cast<float>();
    const DeviceCsr64<float> d(a);
    for (int n : {32, 33, 128})
      for (int rows : {0, 1, 4})
        for (const char* order : {"none", "auto", "degree"}) {
          CAPTURE(name);
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(order);
          auto params = config_to_json(SpmmConfig{});
          params["csr_rows_per_warp"] = rows;
          params["reorder"] = order;
          const Config cfg{"spmm", params, ConfigSource::Explicit, "test"};
          SpmmOptions o;
          o.config = &cfg;
          // The ReLU epilogue with the device-made order: fused into csr_spmm_rows64's stores.
          const bool relu = std::string(order) == "degree";
          if (relu) o.epilogue = SpmmEpilogue::Relu;
          const SpmmPlan plan = plan_spmm(ctx(), d.view(), n, o);
          CHECK(plan.explain().find("64-bit row offsets") != std::string::npos);
          CHECK(plan.epilogue() == (relu ? SpmmEpilogue::Relu : SpmmEpilogue::None));
          if (relu) CHECK(plan.epilogue_fused());
          // The degree order is made on the device; auto takes it where the lengths vary (the
          // power-law and R-MAT graphs, not the uniform one), as the host path does.
          const bool varied = name.rfind("uniform", 0) != 0;
          const std::string o_name = order;
          CHECK(plan.reorder() ==
                (o_name == "degree" || (o_name == "auto" && varied) ? Reorder::Degree : Reorder::None));
          const auto b = dbs_test::random_vector<float>(static_cast<int64_t>(a.cols) * n, 21 + n);
          const auto c0 = dbs_test::random_vector<float>(static_cast<int64_t>(a.rows) * n, 22 + n);
          const auto ab = reference::spmm(a, std::span<const float>(b), n);
          for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, std::pair{-0.5f, 0.75f}}) {
            CAPTURE(alpha);
            std::vector<double> want(ab.size());
            for (size_t i = 0; i < want.size(); ++i) {
              want[i] = alpha * ab[i] + beta * static_cast<double>(c0[i]);
              if (relu && want[i] < 0.0) want[i] = 0.0;
            }
            Stream s(ctx());
            DeviceBuffer<float> db{std::span<const float>(b)}, dc{std::span<const float>(c0)};
            plan.run(db, dc, s, alpha, beta);
            s.synchronize();
            CHECK(reference::relative_error(std::span<const double>(want), std::span<const float>(dc.download())) <=
                  1e-5);
          }
        }
  }
  const auto a = generate("rmat:scale=10,ef=8").cast<float>();
  const DeviceCsr64<float> d(a);
  SpmmOptions half;
  half.dtype = SpmmDtype::F16;
  CHECK_THROWS_AS(plan_spmm(ctx(), d.view(), 32, half), UsageError);
  CHECK_THROWS_AS(plan_spmm(ctx(), d.view(), 32, SpmmOptions{SpmmPath::Brp, 1, 1}), UsageError);
  CHECK_THROWS_AS(plan_spmm(ctx(), d.view(), 0), UsageError);
  SpmmOptions rcm;
  rcm.reorder = Reorder::Rcm;
  CHECK_THROWS_WITH_AS(plan_spmm(ctx(), d.view(), 32, rcm), doctest::Contains("needs A on the host"), UsageError);
}
