// DB-SpMSpV on the GPU against the CPU reference: every direction, every block type alone and
// mixed, x densities from empty to full, generated and real matrices.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "dbsparse/spmspv.hpp"
#include "gpu/gpu_support.hpp"

namespace {

// Sorted distinct indices: round(density * n), at least one when density > 0.
std::vector<int32_t> pick_indices(int32_t n, double density, uint64_t seed) {
  return dbsparse::tools::sample_indices(n, density, seed);
}

template <class T>
struct Case {
  const CsrMatrix<T>& a;
  SpmspvPlan<T>& plan;
};

// Runs the plan on x with the given nonzeros (dense and sparse input) and returns the worse error.
template <class T>
double run_error(const CsrMatrix<T>& a, const SpmspvPlan<T>& plan, const std::vector<int32_t>& idx, uint64_t seed) {
  auto vals = dbs_test::random_vector<T>(idx.size(), seed);
  for (auto& v : vals)
    if (v == T(0)) v = T(0.5);
  std::vector<T> xd(a.cols, T(0));
  for (size_t i = 0; i < idx.size(); ++i) xd[idx[i]] = vals[i];
  auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const T>(vals));
  Stream s(ctx());
  DeviceBuffer<T> x{std::span<const T>(xd)}, y(a.rows);
  y.fill_bytes(0xFF);  // NaN: every row must be written
  plan.run(x, y, s);
  s.synchronize();
  auto got = y.download();
  double err = reference::relative_error(std::span<const double>(ref), std::span<const T>(got));
  // The same x as (index, value) pairs.
  DeviceBuffer<int32_t> di{std::span<const int32_t>(idx)};
  DeviceBuffer<T> dv{std::span<const T>(vals)};
  y.fill_bytes(0xFF);
  plan.run_sparse(di, dv, static_cast<int32_t>(idx.size()), y, s);
  s.synchronize();
  got = y.download();
  return std::max(err, reference::relative_error(std::span<const double>(ref), std::span<const T>(got)));
}

template <class T>
void check_all_directions(const CsrMatrix<double>& ad, const Config* cfg, const char* what,
                          std::initializer_list<double> densities = {1, 0.1, 0.01, 0.001, 0.0001, 0},
                          bool fused = false) {
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  CsrMatrix<T> a = ad.cast<T>();
  for (auto dir : {SpmspvDirection::Auto, SpmspvDirection::Push, SpmspvDirection::Pull}) {
    auto plan = plan_spmspv(ctx(), a, SpmspvOptions{dir, cfg, fused});
    uint64_t seed = 1;
    for (double d : densities) {
      CAPTURE(std::string(what));
      CAPTURE(std::string(to_string(dir)));
      CAPTURE(d);
      CAPTURE(plan.kernel().key);
      CHECK(run_error(a, plan, pick_indices(a.cols, d, seed++), seed) <= tol);
    }
    // A single nonzero, at the last column (a partial last block when cols % 16 != 0).
    if (a.cols > 0) CHECK(run_error(a, plan, {a.cols - 1}, 99) <= tol);
  }
}

// Every nonzero in a block (residual_below 0): these configs test the block microkernels alone.
Config thresholds(int th0, int th1, double th2, double th3 = 0.01) {
  return Config{"spmspv",
                {{"th0", th0}, {"th1", th1}, {"th2", th2}, {"th3", th3}, {"residual_below", 0}},
                ConfigSource::Explicit,
                "test"};
}

Config with_residual(int residual_below, const char* residual_pull = "off") {
  auto p = config_to_json(SpmspvConfig{});
  p["residual_below"] = residual_below;
  p["residual_pull"] = residual_pull;
  return Config{"spmspv", p, ConfigSource::Explicit, "test"};
}

// The default's blocks (every nonzero in a block), for the tests of the block paths' direction.
Config blocks_only() { return with_residual(0); }

// Each 16×16 block: column 0 full plus the diagonal: column-skewed, so ForceCSR (th0 <= 31).
CsrMatrix<double> column_skewed(int32_t n) {
  CooMatrix<double> coo;
  coo.rows = coo.cols = n;
  for (int32_t i = 0; i < n; ++i) {
    int32_t base = i / 16 * 16;
    coo.row.push_back(i), coo.col.push_back(base), coo.values.push_back(1.0 + i % 7);
    if (i != base) coo.row.push_back(i), coo.col.push_back(i), coo.values.push_back(-0.5 - i % 3);
    if (i + 16 < n) coo.row.push_back(i), coo.col.push_back(i + 16), coo.values.push_back(0.25);
  }
  return coo_to_csr(coo);
}

}  // namespace

TEST_CASE("SpmspvMatchesReferenceWithEachBlockTypeAlone") {
  auto a = generate("fem:nodes=3000,k=4,blocks=6");
  auto all_coo = thresholds(257, 256, 2.0);
  auto all_dense = thresholds(0, 0, 2.0);
  auto all_csc = thresholds(0, 256, 0.0);  // skew_r/skew_c > 0 always
  auto all_csr = thresholds(0, 256, 1e9);  // no skew is that large: balanced blocks are ForceCSR
  auto dense_ty = static_cast<int>(BlockType::Dense);
  {
    auto plan = plan_spmspv(ctx(), a.cast<float>(), SpmspvOptions{SpmspvDirection::Auto, &all_dense});
    CHECK(plan.stats().storage.blocks_by_type[dense_ty] == plan.stats().storage.bytes_meta / 20);
    CHECK(plan.kernel().key == "spmspv.auto.f32.plus_times.bs16.t=dense");
  }
  for (auto* cfg : {&all_coo, &all_dense, &all_csc, &all_csr}) {
    check_all_directions<float>(a, cfg, cfg->params.dump().c_str());
    check_all_directions<double>(a, cfg, cfg->params.dump().c_str());
  }
  auto skewed = column_skewed(1000);
  auto csr_only = thresholds(20, 256, 2.0);
  auto plan = plan_spmspv(ctx(), skewed.cast<float>(), SpmspvOptions{SpmspvDirection::Auto, &csr_only});
  CHECK(plan.stats().storage.blocks_by_type[static_cast<int>(BlockType::ForceCsr)] > 0);
  check_all_directions<float>(skewed, &csr_only, "column-skewed");
  check_all_directions<double>(transpose(skewed), &csr_only, "row-skewed");
}

TEST_CASE("SpmspvMatchesReferenceOnGeneratedMatrices") {
  for (const char* spec :
       {"stencil3d:n=24,points=27", "stencil2d:n=200", "banded:n=50000,bw=8", "fem:nodes=30000,k=3,blocks=9",
        "uniform:n=40000,d=16", "rmat:scale=14,ef=8", "powerlaw:n=30000,avg=8,alpha=1.5,max=5000"}) {
    auto a = generate(spec);
    check_all_directions<float>(a, nullptr, spec);
    check_all_directions<double>(a, nullptr, spec);
  }
}

// run() sizes its compute grid from the previous call's x (SpmspvWorkspace::feedback_): a full
// x right after a one-entry x runs on the small grid the one entry asked for, and must still
// cover every task.
TEST_CASE("SpmspvRunOnAGridSizedForTheLastXMatchesReference") {
  for (const char* spec : {"uniform:n=200000,d=8", "powerlaw:n=100000,avg=8,alpha=1.5,max=20000"}) {
    const auto ad = generate(spec);
    check_all_directions<float>(ad, nullptr, spec, {0.00001, 1, 0.0001, 0.5, 0, 0.1, 0.001, 1});
  }
}

TEST_CASE("SpmspvWarpWideCooWalkMatchesReference") {
  // pull_coo = warp: the pull path's COO entries spread over the warp (coo_by_warp). Every block
  // COO (up to 256 entries a block), the defaults' mix, and the shapes that leave partial blocks.
  auto with_warp = [](nlohmann::json p) {
    p["pull_coo"] = "warp";
    return Config{"spmspv", p, ConfigSource::Explicit, "test"};
  };
  const auto all_coo = with_warp({{"th0", 257}, {"th1", 256}, {"th2", 2.0}, {"residual_below", 0}});
  const auto mixed = with_warp(blocks_only().params);
  {
    auto plan = plan_spmspv(ctx(), generate("stencil2d:n=40").cast<float>(), SpmspvOptions{.config = &mixed});
    CHECK(plan.kernel().key.ends_with(".coo=warp"));
  }
  for (const char* spec : {"fem:nodes=3000,k=4,blocks=6", "stencil3d:n=24,points=7", "stencil3d:n=20,points=27",
                           "rmat:scale=13,ef=8", "uniform:n=30001,d=9"}) {
    auto a = generate(spec);
    for (const auto* cfg : {&all_coo, &mixed}) {
      check_all_directions<float>(a, cfg, (std::string(spec) + " " + cfg->params.dump()).c_str());
      check_all_directions<double>(a, cfg, (std::string(spec) + " " + cfg->params.dump()).c_str());
    }
  }
  auto bad = with_warp(config_to_json(SpmspvConfig{}));
  bad.params["pull_coo"] = "block";
  CHECK_THROWS_AS(plan_spmspv(ctx(), generate("stencil2d:n=40").cast<float>(), SpmspvOptions{.config = &bad}),
                  UsageError);
}

TEST_CASE("SpmspvResidualMatchesReference") {
  // The residual alone (257, the default: no block is kept), mixed with blocks (16, 4), and absent
  // (0); pushed always (residual_pull off) or pulled from density 0.5 on (by_density, with its row
  // view); on scattered, hub-heavy (long residual rows and columns: several segments and push
  // pieces per block row / column) and structured matrices.
  const Config cfgs[] = {with_residual(257),
                         with_residual(16),
                         with_residual(4),
                         with_residual(0),
                         with_residual(257, "by_density"),
                         with_residual(16, "by_density")};
  dbs_test::Shard shard;  // a (matrix, config, type) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  for (const char* spec :
       {"uniform:n=30001,d=9", "rmat:scale=14,ef=16,scramble=1", "powerlaw:n=30000,avg=8,alpha=1.2,max=20000",
        "stencil3d:n=20,points=7", "fem:nodes=5000,k=3,blocks=9"}) {
    auto a = generate(spec);
    for (const auto& cfg : cfgs) {
      const std::string what = std::string(spec) + " " + cfg.params.dump();
      if (shard.next()) check_all_directions<float>(a, &cfg, what.c_str());
      if (shard.next()) check_all_directions<double>(a, &cfg, what.c_str(), {0.6, 0.1, 0.001, 0});
    }
    if (!shard.next()) continue;
    auto plan = plan_spmspv(ctx(), a.cast<float>());
    CHECK(plan.stats().storage.residual_nnz == a.nnz());
    CHECK(plan.stats().storage.bytes_meta == 0);
  }
  const auto rows = with_residual(257, "by_density");
  if (shard.next())
    check_all_directions<float>(generate("uniform:n=30001,d=9"), &rows, "fused, all residual", {0.6, 0.1, 0.001}, true);
  if (shard.next())
    check_all_directions<float>(generate("uniform:n=30001,d=9"), nullptr, "fused, default", {0.6, 0.1, 0.001}, true);
}

// run_sparse_out against the reference: the pairs it wrote, scattered into a dense y, match the
// reference; no index twice; every row the reference makes nonzero is there.
template <class T>
void check_sparse_out(const CsrMatrix<T>& a, const SpmspvPlan<T>& plan, const std::vector<int32_t>& idx, uint64_t seed,
                      SpmspvWorkspace<T>* ws = nullptr) {
  auto vals = dbs_test::random_vector<T>(idx.size(), seed);
  for (auto& v : vals)
    if (v == T(0)) v = T(0.5);
  const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const T>(vals));
  Stream s(ctx());
  DeviceBuffer<int32_t> di{std::span<const int32_t>(idx)}, yi(static_cast<size_t>(a.rows)), yn(1);
  DeviceBuffer<T> dv{std::span<const T>(vals)}, yv(static_cast<size_t>(a.rows));
  yn.fill_bytes(0xFF);
  if (ws)
    plan.run_sparse_out(di, dv, static_cast<int32_t>(idx.size()), yi, yv, yn, s, *ws);
  else
    plan.run_sparse_out(di, dv, static_cast<int32_t>(idx.size()), yi, yv, yn, s);
  s.synchronize();
  const int32_t n = yn.download()[0];
  REQUIRE(n >= 0);
  REQUIRE(n <= a.rows);
  // Only y's first n entries are written: the rest of the buffers is never defined (initcheck).
  std::vector<int32_t> gi(static_cast<size_t>(n));
  std::vector<T> gv(static_cast<size_t>(n));
  yi.download_bytes(gi.data(), gi.size() * sizeof(int32_t), 0);
  yv.download_bytes(gv.data(), gv.size() * sizeof(T), 0);
  std::vector<T> dense(static_cast<size_t>(a.rows), T(0));
  std::vector<int> seen(static_cast<size_t>(a.rows), 0);
  bool ok = true;
  for (int32_t k = 0; k < n; ++k) {
    ok = ok && gi[k] >= 0 && gi[k] < a.rows && seen[gi[k]]++ == 0 && gv[k] != T(0);
    if (ok) dense[gi[k]] = gv[k];
  }
  CHECK_MESSAGE(ok, "indices in range, each once, values nonzero");
  int64_t ref_nonzero = 0;
  for (double r : ref) ref_nonzero += r != 0.0;
  CHECK(n == ref_nonzero);
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-12;
  CHECK(reference::relative_error(std::span<const double>(ref), std::span<const T>(dense)) <= tol);
}

TEST_CASE("SpmspvSparseOutputMatchesReference") {
  // Sparse x in, sparse y out: the default (all residual) and the blocks' push, f32 and f64, from
  // a single nonzero to density 0.1, an empty x, and repeated calls through one workspace (each call
  // must leave its buffers clean for the next).
  const auto blocks = blocks_only();
  for (const char* spec : {"uniform:n=30001,d=9", "stencil3d:n=20,points=27",
                           "powerlaw:n=30000,avg=8,alpha=1.2,max=20000", "rmat:scale=14,ef=16,scramble=1"}) {
    const auto ad = generate(spec);
    for (const Config* cfg : {static_cast<const Config*>(nullptr), &blocks}) {
      CAPTURE(spec);
      CAPTURE(cfg ? cfg->params.dump() : std::string("default"));
      const auto a = ad.cast<float>();
      auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = cfg});
      uint64_t seed = 3;
      for (double d : {0.1, 0.01, 0.001, 0.0001, 0.0}) check_sparse_out(a, plan, pick_indices(a.cols, d, seed++), seed);
      check_sparse_out(a, plan, {a.cols - 1}, 77);
      check_sparse_out(a, plan, pick_indices(a.cols, 0.05, 9), 9);  // again, after the others
      const auto a64 = ad;
      auto plan64 = plan_spmspv(ctx(), a64, SpmspvOptions{.config = cfg});
      auto ws = plan64.make_workspace();
      for (double d : {0.02, 0.0005}) check_sparse_out(a64, plan64, pick_indices(a64.cols, d, seed++), seed, &ws);
    }
  }
  // Dense and sparse calls interleave through one workspace.
  const auto a = generate("uniform:n=20000,d=8").cast<float>();
  auto plan = plan_spmspv(ctx(), a);
  check_sparse_out(a, plan, pick_indices(a.cols, 0.01, 1), 1);
  CHECK(run_error(a, plan, pick_indices(a.cols, 0.3, 2), 2) <= 1e-5);
  check_sparse_out(a, plan, pick_indices(a.cols, 0.01, 3), 3);
  // A pull-only plan cannot push: refused with a clear error.
  auto pull = plan_spmspv(ctx(), a, SpmspvOptions{SpmspvDirection::Pull});
  DeviceBuffer<int32_t> di(4), yi(static_cast<size_t>(a.rows)), yn(1);
  DeviceBuffer<float> dv(4), yv(static_cast<size_t>(a.rows));
  Stream s(ctx());
  CHECK_THROWS_WITH_AS(pull.run_sparse_out(di, dv, 0, yi, yv, yn, s), doctest::Contains("pull-only"), UsageError);
  DeviceBuffer<int32_t> small(3);
  CHECK_THROWS_WITH_AS(plan.run_sparse_out(di, dv, 0, small, yv, yn, s), doctest::Contains("room"), UsageError);
}

// run_sparse_out's one-launch path (at most 64 x nonzeros whose column blocks hold at most 256
// entries together: spmspv_sparse_tiny; here k = 1 and 2) and the three-launch path, alternating call after call
// through one workspace: each leaves x, its masks, the touched bits and the accumulator clean.
TEST_CASE("SpmspvSparseOutputOfATinyXMatchesReferenceCallAfterCall") {
  const auto ad = generate("uniform:n=50000,d=4");  // about 64 entries a column block
  const auto a = ad.cast<float>();
  auto plan = plan_spmspv(ctx(), a);
  uint64_t seed = 500;
  for (int round = 0; round < 2; ++round)
    for (int64_t k : {1, 2, 8, 40, 64, 65, 300}) {
      CAPTURE(round);
      CAPTURE(k);
      tools::Lcg rng(seed);
      check_sparse_out(a, plan, tools::sample_indices(a.cols, k, rng), seed++);
    }
  auto plan64 = plan_spmspv(ctx(), ad);
  auto ws = plan64.make_workspace();
  for (int64_t k : {1, 30, 1, 1000, 3}) {
    tools::Lcg rng(seed);
    check_sparse_out(ad, plan64, tools::sample_indices(ad.cols, k, rng), seed++, &ws);
  }
}

TEST_CASE("SpmspvDeviceFootprintIsTheSumOfThePlansAllocations") {
  // device_bytes is summed from the plan's buffers; the format's statistics predict it from the
  // layout alone (what `dbsparse convert --stats` prints without a GPU). The two must agree.
  for (const char* spec : {"uniform:n=20000,d=16", "stencil3d:n=20,points=7", "rmat:scale=13,ef=8"})
    for (int res : {0, 4, 257}) {
      CAPTURE(spec);
      CAPTURE(res);
      const auto cfg = with_residual(res, res == 4 ? "by_density" : "off");
      auto a = generate(spec).cast<float>();
      auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &cfg});
      CHECK(plan.stats().device_bytes == plan.stats().storage.bytes_device);
      const auto th = config_from_json<SpmspvConfig>(cfg.params).thresholds();
      CHECK(plan.stats().device_bytes == db_stats(csr_to_db(a, th)).bytes_device);
      CHECK(plan.stats().device_bytes < plan.stats().storage.bytes_csr_csc * (res == 0 ? 8 : 1));
      if (res == 257) CHECK(plan.stats().device_bytes * 10 < plan.stats().storage.bytes_csr_csc * 6);
    }
}

TEST_CASE("SpmspvFusedPathMatchesReference") {
  // The single cooperative launch (grid barrier between the mask pass and the compute).
  for (const char* spec : {"fem:nodes=30000,k=3,blocks=9", "rmat:scale=14,ef=8"}) {
    auto a = generate(spec);
    check_all_directions<float>(a, nullptr, spec, {1, 0.1, 0.01, 0.001, 0.0001, 0}, true);
    check_all_directions<double>(a, nullptr, spec, {0.1, 0.0001}, true);
  }
}

TEST_CASE("SpmspvMatchesReferenceOnOddShapes") {
  CooMatrix<double> coo;  // 37 × 53 with empty rows and columns
  coo.rows = 37;
  coo.cols = 53;
  for (int32_t i = 0; i < 37; i += 2)
    for (int32_t j = (i * 7) % 5; j < 53; j += 3 + i % 4)
      coo.row.push_back(i), coo.col.push_back(j), coo.values.push_back(0.1 * (i + 1) - 0.03 * j);
  auto a = coo_to_csr(coo);
  check_all_directions<float>(a, nullptr, "37x53");
  check_all_directions<double>(transpose(a), nullptr, "53x37");
  CsrMatrix<double> empty;
  empty.rows = 20;
  empty.cols = 30;
  empty.row_ptr.assign(21, 0);
  check_all_directions<double>(empty, nullptr, "no entries");
}

TEST_CASE("SpmspvMatchesReferenceOnSharedMatrices") {
  for (const auto& path : dbs_test::shared_matrices()) {
    auto a = read_matrix_market(path);
    check_all_directions<float>(a, nullptr, path.c_str(), {0.1, 0.01, 0.001});
    check_all_directions<double>(a, nullptr, path.c_str(), {0.1, 0.001});
  }
}

TEST_CASE("SpmspvAutoSwitchesDirectionByXBlockShare") {
  auto a = generate("banded:n=160000,bw=8").cast<float>();
  const auto blocks = blocks_only();
  auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &blocks});
  CHECK(plan.config().params.value("th3", 0.0) == doctest::Approx(config_to_json(SpmspvConfig{})["th3"].get<double>()));
  Stream s(ctx());
  DeviceBuffer<float> y(a.rows);
  // Each call's y against the reference too: the direction is the plan's choice, the result never is.
  auto run_with = [&](const std::vector<int32_t>& idx) {
    std::vector<float> xd(a.cols, 0.f);
    for (auto i : idx) xd[i] = 1.f;
    DeviceBuffer<float> x{std::span<const float>(xd)};
    plan.run(x, y, s);
    const auto dir = plan.last_direction(s);
    const std::vector<float> ones(idx.size(), 1.f);
    const auto ref = reference::spmspv(a, std::span<const int32_t>(idx), std::span<const float>(ones));
    const auto got = y.download();
    CHECK(reference::relative_error(std::span<const double>(ref), std::span<const float>(got)) <= 1e-5);
    return dir;
  };
  CHECK(run_with(pick_indices(a.cols, 0.0001, 5)) == SpmspvDirection::Push);
  CHECK(plan.last_xb(s) < 0.01);
  // After a call whose x was far below the push thresholds, the next call runs the push-only
  // kernels (SpmspvOptions::direction): a jump to a dense x pushes once, then the plan pulls.
  const auto dense = pick_indices(a.cols, 0.5, 6);
  CHECK(run_with(dense) == SpmspvDirection::Push);
  CHECK(plan.last_xb(s) > 0.5);
  CHECK(run_with(dense) == SpmspvDirection::Pull);
  // ... and after a call that pulled every part, the pull-only kernels: a jump back to a sparse x
  // pulls once, then the plan pushes again.
  const auto sparse = pick_indices(a.cols, 0.0001, 9);
  CHECK(run_with(sparse) == SpmspvDirection::Pull);
  CHECK(run_with(sparse) == SpmspvDirection::Push);
  // The residual chooses by x's density: with its rows stored it pulls from residual_push_below on.
  const auto rows = with_residual(257, "by_density");
  auto rplan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &rows});
  auto run_res = [&](double d, uint64_t seed) {
    std::vector<float> xd(a.cols, 0.f);
    for (auto i : pick_indices(a.cols, d, seed)) xd[i] = 1.f;
    DeviceBuffer<float> x{std::span<const float>(xd)};
    rplan.run(x, y, s);
    return rplan.last_direction(s);
  };
  CHECK(run_res(0.3, 7) == SpmspvDirection::Push);
  CHECK(run_res(0.7, 8) == SpmspvDirection::Pull);
  // Both parts pulled, so the pull-only kernels run next (they pull this residual): a sparser x
  // has its residual pulled once, then pushed again by the auto kernels.
  CHECK(run_res(0.7, 9) == SpmspvDirection::Pull);
  CHECK(run_res(0.3, 10) == SpmspvDirection::Pull);
  CHECK(run_res(0.3, 11) == SpmspvDirection::Push);
  // The default stores no rows: the residual pushes at any density.
  auto dplan = plan_spmspv(ctx(), a);
  std::vector<float> ones(a.cols, 1.f);
  DeviceBuffer<float> x1{std::span<const float>(ones)};
  dplan.run(x1, y, s);
  CHECK(dplan.last_direction(s) == SpmspvDirection::Push);
}

TEST_CASE("SpmspvPaperThresholdComparesXbDirectly") {
  // Banded bw 8: ~100 nonzeros per 16x16 block, so the scaled threshold is ~th3/100.
  auto ad = generate("banded:n=160000,bw=8");
  auto a = ad.cast<float>();
  auto paper = config_to_json(SpmspvConfig::paper());
  Config direct{"spmspv", paper, ConfigSource::Explicit, "test"};
  auto plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &direct});
  CHECK(plan.stats().xb_threshold == doctest::Approx(paper["th3"].get<double>()));
  auto scaled_params = paper;
  scaled_params["th3_scale"] = "nnz_per_block";
  Config scaled{"spmspv", scaled_params, ConfigSource::Explicit, "test"};
  auto scaled_plan = plan_spmspv(ctx(), a, SpmspvOptions{.config = &scaled});
  CHECK(scaled_plan.stats().xb_threshold < paper["th3"].get<double>() / 10);
  auto bad_params = paper;
  bad_params["th3_scale"] = "per_row";
  Config bad{"spmspv", bad_params, ConfigSource::Explicit, "test"};
  CHECK_THROWS_AS(plan_spmspv(ctx(), a, SpmspvOptions{.config = &bad}), UsageError);
  // Both threshold forms give the reference result.
  check_all_directions<float>(ad, &direct, "banded, paper thresholds", {0.01, 0.001});
}

TEST_CASE("SpmspvRunRejectsWrongSizes") {
  auto a = generate("stencil2d:n=20").cast<float>();
  auto plan = plan_spmspv(ctx(), a);
  Stream s(ctx());
  DeviceBuffer<float> x(a.cols + 3), y(a.rows);
  CHECK_THROWS_AS(plan.run(x, y, s), UsageError);
}
