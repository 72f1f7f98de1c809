// The applications of hash SpGEMM on the GPU (spgemm_apps.hpp) against their CPU references:
// square against reference::spgemm and contract against contract_cpu (the same structure exactly,
// values within 1e-5 (f32) / 1e-12 (f64) of the sum of |terms| of each entry); mcl's labels against
// mcl_cpu's (the criterion: values differ in the last bits, so ties may fall otherwise);
// one GPU MCL step against mcl_step where the values are exact on both sides, ties at the top-k cut
// included, so that the pruning rule itself is compared entry for entry.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "cases/spgemm_cases.hpp"
#include "dbsparse/spgemm_apps.hpp"
#include "gpu/gpu_support.hpp"
#include "tools/bench/random.hpp"
#include "tools/bench/spgemm_apps_check.hpp"

namespace {

template <class T>
double tolerance() {
  return sizeof(T) == 4 ? 1e-5 : 1e-12;
}

// rows x cols, `per_row` random columns a row (duplicates summed), values in [-1, 1).
CsrMatrix<double> random_matrix(int32_t rows, int32_t cols, int per_row, uint64_t seed) {
  tools::Lcg rng{seed};
  std::vector<dbs_test::Entry> e;
  for (int32_t i = 0; i < rows; ++i)
    for (int p = 0; p < per_row; ++p)
      e.emplace_back(i, static_cast<int32_t>(rng.below(static_cast<uint32_t>(cols))), rng.unit() * 2 - 1);
  return dbs_test::csr_from_entries<double>(rows, cols, e);
}

using dbs_test::cliques;

template <class T>
void check_square(const CsrMatrix<double>& a, bool transpose) {
  const CsrMatrix<T> at = a.cast<T>();
  const CsrMatrix<T> c = square(ctx(), at, transpose);
  const CsrMatrix<T> b = square_uses_transpose(at, transpose) ? dbsparse::transpose(at) : at;
  const tools::SpgemmCheck chk = tools::check_product(c, at, b, tolerance<T>());
  CHECK_MESSAGE(chk.ok, chk.note);
  validate(c);
}

template <class T>
void check_contract(const CsrMatrix<double>& g, const std::vector<int32_t>& labels, int32_t k) {
  CAPTURE(k);
  CAPTURE(sizeof(T));
  const CsrMatrix<T> gt = g.cast<T>();
  const ContractResult<T> r = contract(ctx(), gt, labels, k);
  REQUIRE(r.c.rows == k);
  REQUIRE(r.c.cols == k);
  validate(r.c);
  const tools::SpgemmCheck chk = tools::check_contraction(r.c, gt, labels, k, tolerance<T>());
  CHECK_MESSAGE(chk.ok, chk.note);
  CHECK(r.flops == 2 * (g.nnz() + r.nnz_sg));
}

// The labels of mcl() on the GPU against mcl_cpu's, and both runs' bookkeeping.
template <class T>
MclResult check_mcl(const CsrMatrix<double>& g, const MclOptions& o = {}) {
  CAPTURE(sizeof(T));
  const MclResult want = mcl_cpu(g, o);
  const MclResult got = mcl(ctx(), g.cast<T>(), o);
  const tools::LabelCheck chk = tools::check_labels(got.labels, want.labels);
  CHECK_MESSAGE(chk.ok, chk.note);
  CHECK(got.clusters == want.clusters);
  CHECK(got.converged == want.converged);
  // The change is measured in other roundings: it may cross the tolerance an iteration apart.
  CHECK(std::abs(got.iterations - want.iterations) <= 1);
  REQUIRE(got.trace.size() == static_cast<size_t>(got.iterations));
  for (const MclIteration& it : got.trace) {
    CHECK(it.nnz <= it.nnz_expanded);
    CHECK(it.nnz <= int64_t{g.rows} * o.keep_top_k);
  }
  return got;
}

// P with exact values whose expansion puts `values` (integers) in rows 0 and 1 at columns 2.. :
// row 0 = {1: 1}, row 1 = {2 + c: values[c]}, row 2 + c = {2 + c: 1}. Q = P·P then has those
// integers in rows 0 and 1, and r = 2 squares them exactly, so the CPU and the GPU see the same
// ties. (P need not be stochastic for one step.)
CsrMatrix<double> tie_matrix(const std::vector<double>& values) {
  const auto n = static_cast<int32_t>(values.size()) + 2;
  std::vector<dbs_test::Entry> e;
  e.emplace_back(0, 1, 1.0);
  for (int32_t c = 0; c < static_cast<int32_t>(values.size()); ++c) {
    e.emplace_back(1, 2 + c, values[c]);
    e.emplace_back(2 + c, 2 + c, 1.0);
  }
  return dbs_test::csr_from_entries<double>(n, n, e);
}

// One GPU step against mcl_step: the same kept entries exactly; values within `rel` (the second
// normalisation sums in another order); the change against mcl_change.
template <class T>
void check_step(const CsrMatrix<double>& p, const MclOptions& o, double rel) {
  CAPTURE(sizeof(T));
  CAPTURE(o.keep_top_k);
  CAPTURE(o.prune_below);
  const CsrMatrix<double> want = mcl_step(p, o);
  double change = -1;
  const CsrMatrix<T> got = mcl_step(ctx(), p.cast<T>(), o, &change);
  validate(got);
  REQUIRE(got.row_ptr == want.row_ptr);
  REQUIRE(got.col_idx == want.col_idx);
  int64_t bad = 0;
  for (size_t q = 0; q < want.values.size(); ++q)
    if (!(std::fabs(static_cast<double>(got.values[q]) - want.values[q]) <= rel * std::fabs(want.values[q])) &&
        bad++ == 0)
      MESSAGE(fmt::format("entry {}: got {}, want {}", q, static_cast<double>(got.values[q]), want.values[q]));
  CHECK(bad == 0);
  const double want_change = mcl_change(p, want);
  CHECK(std::fabs(change - want_change) <= std::max(rel, 1e-15) * std::max(1.0, want_change));
}

}  // namespace

TEST_CASE("SquareGpuMatchesTheReferenceOnGeneratedAndRectangularMatrices") {
  for (const char* spec : {"rmat:scale=10,ef=8", "stencil2d:n=30", "powerlaw:n=3000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const CsrMatrix<double> a = generate(spec);
    check_square<double>(a, false);
    check_square<double>(a, true);
    check_square<float>(a, false);
    check_square<float>(a, true);
  }
  // Not square: A·Aᵀ whatever `transpose` says.
  const CsrMatrix<double> r = random_matrix(170, 300, 6, 5);
  CHECK(square_uses_transpose(r, false));
  check_square<double>(r, false);
  check_square<float>(r, false);
  const CsrMatrix<float> c = square(ctx(), r.cast<float>());
  CHECK(c.rows == 170);
  CHECK(c.cols == 170);
  // plan_square: its steady rerun gives the same C.
  const CsrMatrix<double> a = generate("uniform:n=2000,d=8");
  auto plan = plan_square(ctx(), a);
  Stream s(ctx());
  plan.run(s.handle());
  plan.run(s.handle());
  const tools::SpgemmCheck chk = tools::check_product(plan.download(), a, a, 1e-12);
  CHECK_MESSAGE(chk.ok, chk.note);
}

TEST_CASE("ContractGpuMatchesContractCpuOnGeneratedGraphsAndRandomLabels") {
  uint64_t seed = 1;
  for (const char* spec : {"rmat:scale=10,ef=8", "roadnet:n=6000,seed=3", "uniform:n=2000,d=8",
                           "powerlaw:n=3000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const CsrMatrix<double> g = generate(spec);
    for (int32_t k : {1, 7, 64, std::max(1, g.rows / 8), g.rows}) {
      const std::vector<int32_t> labels = tools::random_labels(g.rows, k, seed++);
      check_contract<double>(g, labels, k);
      // f32 sums a k = 1 entry over all of G in one atomic chain: past the 1e-5 bound by its length alone.
      if (k >= 64) check_contract<float>(g, labels, k);
    }
    // More labels than used: the unused ones are empty rows and columns.
    const std::vector<int32_t> labels = tools::random_labels(g.rows, 10, seed++);
    check_contract<double>(g, labels, 25);
  }
}

TEST_CASE("ContractGpuMatchesAHandMadeContractionAndRejectsWhatTheCpuRejects") {
  // contract_cpu's hand-made case: a path 0-1-...-5 with weights, a loop at 0, pairs merged.
  const auto g = dbs_test::csr_from_entries<double>(6, 6,
                                                    {{0, 0, 0.5},
                                                     {0, 1, 1},
                                                     {1, 0, 1},
                                                     {1, 2, 2},
                                                     {2, 1, 2},
                                                     {2, 3, 3},
                                                     {3, 2, 3},
                                                     {3, 4, 4},
                                                     {4, 3, 4},
                                                     {4, 5, 5},
                                                     {5, 4, 5}});
  const ContractResult<double> r = contract(ctx(), g, std::vector<int32_t>{0, 0, 1, 1, 2, 2}, 3);
  CHECK(r.c.row_ptr == std::vector<int32_t>{0, 2, 5, 7});
  CHECK(r.c.col_idx == std::vector<int32_t>{0, 1, 0, 1, 2, 1, 2});
  CHECK(r.c.values == std::vector<double>{2.5, 2, 2, 6, 4, 4, 10});
  // Cancelling weights leave an explicit zero, as in contract_cpu.
  const auto z =
      contract(ctx(), dbs_test::csr_from_entries<double>(2, 2, {{0, 1, 1}, {1, 0, -1}}), std::vector<int32_t>{0, 0}, 1);
  CHECK(z.c.nnz() == 1);
  CHECK(z.c.values[0] == 0.0);
  // The empty graph.
  CHECK(contract(ctx(), CsrMatrix<double>{}, std::vector<int32_t>{}, 0).c.nnz() == 0);
  CHECK_THROWS_WITH_AS(contract(ctx(), g, std::vector<int32_t>{0, 1, 5, 0, 0, 0}, 3),
                       doctest::Contains("vertex 2 has label 5, outside [0, 3)"), UsageError);
  CHECK_THROWS_WITH_AS(contract(ctx(), g, std::vector<int32_t>{0, 1}, 3),
                       doctest::Contains("2 labels for a graph of 6 vertices"), UsageError);
}

TEST_CASE("ContractionFactorsOnTheDeviceMatchTheHostFactors") {
  // The merge passes (one per doubling of the longest row) on rows of 1 to n vertices, lengths
  // that are not powers of two, labels left unused, and one label holding nearly every vertex.
  struct Case {
    int32_t n, k;
    const char* kind;
  };
  uint64_t seed = 11;
  for (const Case c : {Case{1, 1, "random"}, Case{5, 1, "random"}, Case{1000, 1, "random"}, Case{1000, 3, "random"},
                       Case{4097, 64, "random"}, Case{70000, 7, "random"}, Case{3000, 3000, "random"},
                       Case{3000, 5000, "random"}, Case{50000, 40, "skewed"}, Case{2000, 9, "descending"}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.kind);
    std::vector<int32_t> labels = tools::random_labels(c.n, std::min(c.k, 4096), seed++);
    if (std::string(c.kind) == "skewed")  // 9 in 10 vertices in label 0, the rest spread
      for (int32_t j = 0; j < c.n; ++j) labels[j] = j % 10 ? 0 : labels[j] % c.k;
    if (std::string(c.kind) == "descending")
      for (int32_t j = 0; j < c.n; ++j) labels[j] = (c.n - 1 - j) * c.k / c.n;
    const auto [hs, hst] = contraction_factors<double>(c.n, labels, c.k);
    Stream stream(ctx());
    const DeviceBuffer<int32_t> dl(labels);
    const auto [ds, dst] =
        contraction_factors<double>(ctx(), reinterpret_cast<const int32_t*>(dl.ptr()), c.n, c.k, stream.handle());
    stream.synchronize();
    const CsrMatrix<double> s = download(ds.view()), st = download(dst.view());
    CHECK(s.rows == hs.rows);
    CHECK(s.cols == hs.cols);
    CHECK(s.row_ptr == hs.row_ptr);
    CHECK(s.col_idx == hs.col_idx);
    CHECK(s.values == hs.values);
    CHECK(st.rows == hst.rows);
    CHECK(st.cols == hst.cols);
    CHECK(st.row_ptr == hst.row_ptr);
    CHECK(st.col_idx == hst.col_idx);
    CHECK(st.values == hst.values);
  }
  Stream stream(ctx());
  const DeviceBuffer<int32_t> bad(std::vector<int32_t>{0, 1, 2, -4, 7, 1});
  const auto* bp = reinterpret_cast<const int32_t*>(bad.ptr());
  CHECK_THROWS_WITH_AS(contraction_factors<float>(ctx(), bp, 6, 3, stream.handle()),
                       doctest::Contains("vertex 3 has label -4, outside [0, 3)"), UsageError);
  CHECK_THROWS_WITH_AS(contraction_factors<float>(ctx(), bp, 6, 0, stream.handle()),
                       doctest::Contains("vertex 0 has label 0, outside [0, 0)"), UsageError);
  CHECK_THROWS_AS(contraction_factors<float>(ctx(), nullptr, 6, 3, stream.handle()), UsageError);
  // No vertices: S is k x 0, Sᵀ 0 x k, and nothing is launched.
  const auto [es, est] = contraction_factors<float>(ctx(), nullptr, 0, 4, stream.handle());
  stream.synchronize();
  CHECK(download(es.view()).row_ptr == std::vector<int32_t>(5, 0));
  CHECK(download(est.view()).row_ptr == std::vector<int32_t>{0});
}

TEST_CASE("ContractOnTheDeviceMatchesContractCpuAndLeavesCThere") {
  uint64_t seed = 101;
  for (const char* spec : {"roadnet:n=6000,seed=3", "powerlaw:n=3000,avg=8,alpha=1.5,max=1500"}) {
    CAPTURE(spec);
    const CsrMatrix<double> g = generate(spec);
    for (int32_t k : {1, 64, g.rows / 8}) {
      CAPTURE(k);
      const std::vector<int32_t> labels = tools::random_labels(g.rows, k, seed++);
      Stream stream(ctx());
      const DeviceCsr<double> dg(g);
      const DeviceBuffer<int32_t> dl(labels);
      const DeviceContraction<double> d =
          contract(ctx(), dg.view(), reinterpret_cast<const int32_t*>(dl.ptr()), k, stream.handle());
      const CsrMatrix<double> c = download(d.result());
      REQUIRE(c.rows == k);
      validate(c);
      const tools::SpgemmCheck chk = tools::check_contraction(c, g, labels, k, tolerance<double>());
      CHECK_MESSAGE(chk.ok, chk.note);
      CHECK(d.sg.nnz() >= c.nnz());
      CHECK(d.times.upload_ms == 0);
    }
  }
  const DeviceCsr<double> rect(random_matrix(3, 4, 2, 5));
  const DeviceBuffer<int32_t> dl(std::vector<int32_t>{0, 0, 0});
  Stream stream(ctx());
  CHECK_THROWS_WITH_AS(contract(ctx(), rect.view(), reinterpret_cast<const int32_t*>(dl.ptr()), 1, stream.handle()),
                       doctest::Contains("the graph must be square, is 3x4"), UsageError);
}

TEST_CASE("MclGpuStartAndLabelsMatchMclStartAndMclLabels") {
  // The start: weights or not, loops or not, on graphs with loops of their own, zero and negative
  // weights (a zero is no edge; |w| when weighted) and empty columns.
  CsrMatrix<double> odd = dbs_test::csr_from_entries<double>(
      6, 6, {{0, 0, 2}, {0, 1, -3}, {1, 0, 0.5}, {1, 2, 0}, {2, 2, -1}, {3, 1, 4}, {4, 4, 0}});
  std::vector<CsrMatrix<double>> graphs = {odd, generate("roadnet:n=6000,seed=3"),
                                           generate("powerlaw:n=3000,avg=8,alpha=1.5,max=1500"),
                                           random_matrix(2000, 2000, 3, 9), CsrMatrix<double>{}};
  for (size_t gi = 0; gi < graphs.size(); ++gi) {
    for (int mode = 0; mode < 4; ++mode) {
      CAPTURE(gi);
      CAPTURE(mode);
      MclOptions o;
      o.weighted = mode & 1;
      o.add_self_loops = mode & 2;
      const CsrMatrix<double> want = mcl_start(graphs[gi], o);
      const CsrMatrix<double> got = mcl_start(ctx(), graphs[gi], o);
      REQUIRE(got.row_ptr == want.row_ptr);
      REQUIRE(got.col_idx == want.col_idx);
      for (size_t e = 0; e < want.values.size(); ++e)
        REQUIRE(got.values[e] == doctest::Approx(want.values[e]).epsilon(1e-12));
      const CsrMatrix<float> got32 = mcl_start(ctx(), graphs[gi].cast<float>(), o);
      REQUIRE(got32.col_idx == want.col_idx);
      for (size_t e = 0; e < want.values.size(); ++e)
        REQUIRE(got32.values[e] == doctest::Approx(want.values[e]).epsilon(1e-6));
    }
  }
  // The labels: components over the positive entries only (negative and zero ones join nothing),
  // numbered by their smallest vertex; a grid's long paths take several hook passes.
  for (const CsrMatrix<double>& p : {random_matrix(3000, 3000, 1, 21), random_matrix(3000, 3000, 2, 22),
                                     generate("roadnet:n=6000,seed=3"), odd, CsrMatrix<double>{}}) {
    CAPTURE(p.rows);
    const MclResult want = mcl_labels(p);
    const MclResult got = mcl_labels(ctx(), p);
    CHECK(got.clusters == want.clusters);
    CHECK(got.labels == want.labels);
    const MclResult got32 = mcl_labels(ctx(), p.cast<float>());
    CHECK(got32.labels == want.labels);
  }
}

TEST_CASE("MclGpuFindsTheClustersMclCpuFinds") {
  // Two 5-cliques joined by one edge: two clusters.
  const auto two = cliques(10, {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}, {{4, 5}});
  const MclResult r = check_mcl<double>(two);
  CHECK(r.clusters == 2);
  CHECK(r.labels == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(r.converged);
  CHECK(check_mcl<float>(two).labels == r.labels);
  // Three interleaved cliques in a ring (the cpu test's), and isolated vertices with and without loops.
  check_mcl<double>(cliques(15, {{2, 5, 8, 11}, {0, 3, 6, 9, 12}, {1, 4, 7, 10, 13, 14}}, {{11, 0}, {12, 1}, {14, 2}}));
  const auto lone = cliques(8, {{0, 1, 2, 3, 4}}, {});
  CHECK(check_mcl<double>(lone).labels == std::vector<int32_t>{0, 0, 0, 0, 0, 1, 2, 3});
  MclOptions no_loops;
  no_loops.add_self_loops = false;
  CHECK(check_mcl<double>(lone, no_loops).clusters == 4);
  // The empty graph: one (empty) iteration, converged, as on the CPU.
  const MclResult empty = mcl(ctx(), CsrMatrix<double>{});
  CHECK(empty.labels.empty());
  CHECK(empty.iterations == 1);
  CHECK(empty.converged);
  MclOptions bad;
  bad.keep_top_k = 0;
  CHECK_THROWS_WITH_AS(mcl(ctx(), two, bad), doctest::Contains("'keep_top_k'"), UsageError);
}

TEST_CASE("MclGpuLabelsEqualMclCpusOnGeneratedGraphs") {
  // Unweighted, the top-k cut would fall among entries that are equal on paper and differ in the
  // last bits on one side: a top-k above every row's length leaves the threshold alone to prune.
  MclOptions wide;
  wide.keep_top_k = 4096;
  for (const char* spec : {"rmat:scale=8,ef=4", "stencil2d:n=12", "roadnet:n=1500,seed=2", "uniform:n=400,d=4"}) {
    CAPTURE(spec);
    check_mcl<double>(generate(spec), wide);
  }
  // Weighted by the generators' random values, ties are unlikely: a top-k of 12 (and the default 50
  // with a milder inflation) cuts rows.
  MclOptions weighted;
  weighted.weighted = true;
  weighted.keep_top_k = 12;
  for (const char* spec : {"rmat:scale=9,ef=8", "powerlaw:n=800,avg=6,alpha=1.5,max=300"}) {
    CAPTURE(spec);
    const CsrMatrix<double> g = generate(spec);
    check_mcl<double>(g, weighted);
    check_mcl<double>(g, MclOptions{.inflation = 1.6, .weighted = true});
  }
  // f32 against the CPU's double: a top-k cut between values closer than f32's rounding could fall
  // otherwise, so the threshold alone prunes here too.
  check_mcl<float>(generate("rmat:scale=8,ef=4"), wide);
}

TEST_CASE("MclGpuStepPrunesAsMclStepTiesToTheSmallerColumn") {
  // Eight equal entries in rows 0 and 1 after expansion (w = 1/8 each).
  const auto eight = tie_matrix(std::vector<double>(8, 1.0));
  MclOptions o;
  o.keep_top_k = 3;  // more pass the threshold than are kept: the three smallest columns, 2, 3, 4
  check_step<double>(eight, o, 0);
  check_step<float>(eight, o, 1e-6);
  {
    const CsrMatrix<double> p = mcl_step(ctx(), eight, o);
    CHECK(std::vector<int32_t>(p.col_idx.begin() + p.row_ptr[0], p.col_idx.begin() + p.row_ptr[1]) ==
          std::vector<int32_t>{2, 3, 4});
  }
  o.prune_below = 0.5;  // none passes: the largest alone, the smallest column among equals
  check_step<double>(eight, o, 0);
  o.prune_below = 0.1;  // all eight pass, eight > top-k 3
  check_step<double>(eight, o, 0);
  o.keep_top_k = 8;  // exactly top-k pass: the threshold alone decides
  check_step<double>(eight, o, 0);
  o.prune_below = 0.125;  // on the threshold exactly (1/8 is exact): kept, as on the CPU (w >= threshold)
  check_step<double>(eight, o, 0);

  // 40 entries, values 1..10 four times each: top-k 6 keeps the four 10s and the two 9s of
  // the smallest columns.
  std::vector<double> v;
  for (int c = 0; c < 40; ++c) v.push_back(1 + (c * 7) % 10);
  MclOptions six;
  six.keep_top_k = 6;
  check_step<double>(tie_matrix(v), six, 1e-14);
  check_step<float>(tie_matrix(v), six, 1e-6);
  // 1000 entries (several chunks of a block), 50 values twenty times each: the cut at 290 falls
  // inside the group of 36s (fourteen groups of twenty above it), and the threshold drops the
  // values below 10.
  v.clear();
  for (int c = 0; c < 1000; ++c) v.push_back(1 + (c * 37) % 50);
  MclOptions many;
  many.keep_top_k = 290;
  check_step<double>(tie_matrix(v), many, 1e-14);
  many.keep_top_k = 1000;
  many.prune_below = 2e-3;  // the threshold alone
  check_step<double>(tie_matrix(v), many, 1e-14);
  many.prune_below = 0.9;  // none passes
  check_step<double>(tie_matrix(v), many, 1e-14);
}

TEST_CASE("MclGpuStepMatchesMclStepOnWeightedGeneratedGraphs") {
  // Random weights (no stencil: its equal weights put ties at the cut that only rounding decides).
  for (const char* spec : {"rmat:scale=9,ef=8", "roadnet:n=3000,seed=4", "uniform:n=2000,d=8"}) {
    CAPTURE(spec);
    MclOptions o;
    o.weighted = true;
    o.keep_top_k = 10;
    CsrMatrix<double> p = mcl_start(generate(spec), o);
    // Three steps, each from the CPU's P, so that the comparison is one step at a time.
    for (int s = 0; s < 3; ++s) {
      CAPTURE(s);
      check_step<double>(p, o, 1e-12);
      p = mcl_step(p, o);
    }
  }
}

using dbs_test::lower;
using dbs_test::undirected;

TEST_CASE("TriangleCountGpuMatchesTheCpuOnGeneratedGraphs") {
  Stream s(ctx());
  dbs_test::Shard shard;  // a (graph, count) a shard under a sanitizer (hardening_run.sh SAN_SHARDS)
  // Under racecheck a third of the power-law graph (dbs_test::under_racecheck): s30 and s31 cut its
  // L·L product (the mask item) at 500 and 554 s there.
  const std::string powerlaw = dbs_test::full_or_under_racecheck<std::string>(
      "powerlaw:n=30000,avg=6,max=3000,alpha=1.5,seed=2", "powerlaw:n=10000,avg=6,max=1000,alpha=1.5,seed=2");
  for (const char* spec : {"roadnet:n=20000,seed=1", "rmat:scale=14,ef=16,seed=1", powerlaw.c_str(),
                           "uniform:n=20000,d=8,seed=1", "stencil3d:n=12,points=27"}) {
    CAPTURE(spec);
    const bool f64 = shard.next(), f32 = shard.next(), mask = shard.next();
    if (!f64 && !f32 && !mask) continue;
    const CsrMatrix<double> g = undirected(generate(spec));
    const int64_t want = triangle_count_cpu(g);
    if (f64) CHECK(triangle_count(ctx(), g) == want);
    if (f32) CHECK(triangle_count(ctx(), g.cast<float>()) == want);
    if (!mask) continue;
    // The baseline's mask step on our own C = L·L gives the same count.
    const CsrMatrix<float> l = lower(g).cast<float>();
    SpgemmPlan<float> plan = plan_spgemm(ctx(), l, l);
    plan.run(s.handle());
    DeviceCsr<float> ld(l);
    CHECK(std::llround(triangle_mask_sum(ctx(), plan.result(), ld.view(), s.handle())) == want);
  }
  if (!shard.next()) return;
  // A directed pattern: only the entries below the diagonal count, as on the CPU.
  const CsrMatrix<double> d = generate("uniform:n=3000,d=12,seed=5");
  CHECK(triangle_count(ctx(), d) == triangle_count_cpu(d));
  CHECK(triangle_count(ctx(), CsrMatrix<double>{}) == 0);
}

TEST_CASE("TriangleCountGpuRejectsUnsortedRowsAndNonSquareGraphs") {
  CsrMatrix<double> g = undirected(cliques(40, {{0, 1, 2, 3, 4, 5}, {10, 11, 12}}, {}));
  // Row 11 (columns 10 and 12) reversed: named in the error.
  std::swap(g.col_idx[g.row_ptr[11]], g.col_idx[g.row_ptr[11] + 1]);
  try {
    (void)triangle_count(ctx(), g);
    FAIL("no error for an unsorted row");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("row 11") != std::string::npos);
  }
  CsrMatrix<double> rect = generate("uniform:n=50,d=3,seed=1");
  rect.cols += 1;
  CHECK_THROWS_AS((void)triangle_count(ctx(), rect), UsageError);
  CHECK_THROWS_AS((void)triangle_count_cpu(rect), UsageError);
}
