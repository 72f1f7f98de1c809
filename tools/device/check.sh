#!/usr/bin/env bash
# Runs ON the lent GPU machine, in one call: the gpu tests, JIT timing in two fresh processes, a
# compute-sanitizer pass and the SpMV bench. Logs and JSON go to $OUT (at most 8 files come back).
#   tools/device/check.sh [all|tests|bench|spmspv|spmv|spmv-bench|tune|tune-full|evaluate|compare|compare-tests|compare-bench|bfs|bfs-bench|spgemm-bench|public-bench|decode|cases] [extra arguments...]
# compare: every gpu test, sanitizers over the SpMSpV cases, then both benches on the generated
# suite with the defaults (no tuning DB): the before/after figures of a restructuring.
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-all}; shift || true
. tools/device/device_env.sh
log=$OUT/tests.log
status=0
# memcheck and racecheck over the gpu test cases named in $1; logs to $OUT/<tool>.log.
sanitize() {
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$D/bin/test_gpu" -tc="$1" >"$OUT/$tool.log" 2>&1
    echo "$tool exit $?; $(grep 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" | tee -a "$log"
  done
}
if [ "$mode" = all ] || [ "$mode" = tests ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$log" 2>&1
  echo "== gpu tests" | tee -a "$log"
  "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
  tail -3 "$log"
  echo "== nvrtc + cpu tests" | tee -a "$log"
  if [ -x "$D/bin/test_cpu" ]; then
    ("$D/bin/test_nvrtc" && "$D/bin/test_cpu") 2>&1 | grep -E "test cases|Status" | tee -a "$log"
  else
    echo "not carried (prepare.sh with PREPARE_CPU_TESTS=0)" | tee -a "$log"
  fi
  echo "== jit timing (fresh cache: process 1 compiles, process 2 loads from disk)" | tee -a "$log"
  fresh=$(mktemp -d)
  DBSPARSE_CACHE_DIR=$fresh "$D/bin/dbsparse" info --jit-timing 2>&1 | grep -E "JIT|spmv" | tee -a "$log"
  DBSPARSE_CACHE_DIR=$fresh "$D/bin/dbsparse" info --jit-timing --json "$OUT/jit.json" 2>&1 \
    | grep -E "JIT|spmv" | tee -a "$log"
  if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer memcheck" | tee -a "$log"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$D/bin/test_gpu" \
      -tc='SpmvMatchesReferenceOnGeneratedMatrices,SpmvHonoursAlphaAndBeta,SpmvHandlesEdgeShapes' \
      >"$OUT/memcheck.log" 2>&1
    echo "memcheck exit $?; $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$log"
  fi
fi
# bfs: the BFS gpu tests, the sanitizers over them, then bench bfs on the quick suite (bfs-bench:
# the bench alone, extra arguments passed on, e.g. --suite full).
if [ "$mode" = bfs ]; then
  echo "== gpu tests (bfs)" | tee "$log"
  "$D/bin/test_gpu" -tc='Bfs*,Context*' >>"$log" 2>&1 || status=1
  grep -E "test cases|assertions|Status|FAILED|ERROR" "$log" | tail -12
  # racecheck took 6 minutes over the path/star cases (thousands of host-loop launches): the small ones.
  SANITIZE_CASES=${SANITIZE_CASES:-BfsMatchesReferenceWithSelfLoops*,BfsFollows*,BfsDirectionRule*}
  sanitize "$SANITIZE_CASES"
fi
if [ "$mode" = bfs ] || [ "$mode" = bfs-bench ]; then
  [ $# -eq 0 ] && set -- --suite quick
  echo "== bench bfs $*"
  "$D/bin/dbsparse" bench bfs --json "$OUT/bench_bfs.json" "$@" 2>"$OUT/bench_progress.log" \
    | grep -v '^jit' >"$OUT/bench_bfs.txt"
  cat "$OUT/bench_bfs.txt" | cut -c1-200
fi
# spgemm-bench: bench spgemm, by default on the quick suite in f32 and f64 without the shared
# matrices; extra arguments replace those (e.g. --suite full --no-shared --precision f32).
if [ "$mode" = spgemm-bench ]; then
  [ $# -eq 0 ] && set -- --suite quick --no-shared --precision f32,f64
  echo "== bench spgemm $*"
  "$D/bin/dbsparse" bench spgemm --json "$OUT/bench_spgemm.json" "$@" 2>"$OUT/bench_progress.log" \
    | grep -v '^jit' >"$OUT/bench_spgemm.txt" || status=1
  cut -c1-240 "$OUT/bench_spgemm.txt"
  tail -3 "$OUT/bench_progress.log"
fi
# public-bench OP [arguments]: bench OP (default spmm) on the public matrices alone (docs/MATRICES.md;
# prepare.sh carries them when scripts/fetch_matrices.py has fetched them), no generated suite.
if [ "$mode" = public-bench ]; then
  op=${1:-spmm}; shift || true
  if [ -z "$(ls "$DBSPARSE_PUBLIC_MATRICES"/*.mtx.gz 2>/dev/null)" ]; then
    echo "public-bench: no .mtx.gz in $DBSPARSE_PUBLIC_MATRICES: run scripts/fetch_matrices.py, then prepare.sh, here" >&2
    exit 1
  fi
  echo "== bench $op on $DBSPARSE_PUBLIC_MATRICES $*"
  DBSPARSE_MATRICES=$DBSPARSE_PUBLIC_MATRICES "$D/bin/dbsparse" bench "$op" --suite none \
    --json "$OUT/bench_${op}_public.json" "$@" 2>"$OUT/bench_progress.log" | grep -v '^jit' >"$OUT/bench_${op}_public.txt" ||
    status=1
  cut -c1-240 "$OUT/bench_${op}_public.txt"
  tail -3 "$OUT/bench_progress.log"
fi
# cases: every gpu test case in its own process under its own timeout (CASE_LIMIT, 45 s), so a slow
# or hung case cannot hide the others (the whole binary passed 280 s once and its log was lost).
if [ "$mode" = cases ]; then
  : >"$log"
  for tc in $("$D/bin/test_gpu" -ltc 2>/dev/null | grep -v '^\[doctest\]\|^=\|^$'); do
    s=$(date +%s%N); timeout "${CASE_LIMIT:-45}" "$D/bin/test_gpu" -tc="$tc" >/tmp/case.log 2>&1; rc=$?
    echo "$tc rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms" >>"$log"
    if [ $rc -ne 0 ]; then status=1; echo "$tc rc=$rc"; tail -30 /tmp/case.log >>"$log"; fi
  done
  echo "cases: $(grep -c ' rc=0 ' "$log") passed of $(grep -c ' rc=' "$log")"
fi
# decode: the decoding gpu tests, memcheck over them, then decode-bench for the three models in fp16.
if [ "$mode" = decode ]; then
  echo "== gpu tests (decode)" | tee "$log"
  "$D/bin/test_gpu" -tc='SparseLinear*,DecodeLinear*' >>"$log" 2>&1 || status=1
  grep -E "test cases|assertions|Status|FAILED|ERROR" "$log" | tail -12
  sanitize 'SparseLinearMatchesReferenceOnOddShapes,DecodeLinearRowBlocks*,DecodeLinearClone*,DecodeLinearTopK*'
  for m in llama-3.2-1b qwen2.5-1.5b qwen3-0.6b; do
    echo "== decode-bench $m ${*:---dtype f16}"
    "$D/bin/dbsparse" decode-bench --model $m --json "$OUT/decode_$m.json" "${@:---dtype=f16}" 2>>"$OUT/bench_progress.log" \
      | tee "$OUT/decode_$m.txt" | cut -c1-220
  done
fi
if [ "$mode" = spmspv ]; then
  echo "== gpu tests" | tee "$log"
  "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
  tail -3 "$log"
  sanitize 'SpmspvMatchesReferenceWithEachBlockTypeAlone,SpmspvMatchesReferenceOnOddShapes,SpmspvAutoSwitches*,SpmspvWarpWideCooWalkMatchesReference'
  echo "== bench spmspv"
  "$D/bin/dbsparse" bench spmspv --json "$OUT/bench_spmspv.json" "$@" 2>"$OUT/bench_progress.log" \
    | grep -v '^jit' >"$OUT/bench_spmspv.txt"
  sed -n '/summary/,$p' "$OUT/bench_spmspv.txt"
fi
if [ "$mode" = spmv ]; then
  echo "== gpu tests (spmv)" | tee "$log"
  "$D/bin/test_gpu" -tc='Spmv*' >>"$log" 2>&1 || status=1
  tail -3 "$log"
  compute-sanitizer --tool memcheck --error-exitcode 9 "$D/bin/test_gpu" \
    -tc='SpmvClassifiedSplitsMixedRowsAndFoldsThinBins,SpmvHandlesEdgeShapes,SpmvHonoursAlphaAndBeta' \
    >"$OUT/memcheck.log" 2>&1
  echo "memcheck exit $?; $(grep 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)" | tee -a "$log"
fi
if [ "$mode" = spmv ] || [ "$mode" = spmv-bench ]; then
  echo "== bench spmv (strategies + scalar baseline + cuSPARSE ALG1/ALG2)"
  "$D/bin/dbsparse" bench spmv --precision f32,f64 --strategy classified,classified-split,uniform,scalar \
    --json "$OUT/bench_spmv.json" "$@" 2>"$OUT/bench_progress.log" | grep -v '^jit' >"$OUT/bench_spmv.txt"
  sed -n '/summary/,$p' "$OUT/bench_spmv.txt"
fi
# compare = compare-tests then compare-bench (two calls when one would pass the 600 s limit).
if [ "$mode" = compare ] || [ "$mode" = compare-tests ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$log" 2>&1
  echo "== gpu tests" | tee -a "$log"
  "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
  grep -E "test cases|assertions|Status|FAILED|ERROR" "$log" | tail -8
  sanitize "${SANITIZE_CASES:-SpmspvMatchesReferenceOnOddShapes,SpmspvAutoSwitches*,SpmspvDeviceFootprint*,SpmspvFused*,SpmvClassifiedSplitsMixedRowsAndFoldsThinBins,SpmvHandlesEdgeShapes,*Graph*,*TwoStreams*}"
  echo "== bench spmspv (generated suite, defaults, stream launches)"
  "$D/bin/dbsparse" bench spmspv --no-shared --json "$OUT/bench_spmspv.json" "$@" 2>"$OUT/bench_progress.log" \
    | grep -v '^jit' >"$OUT/bench_spmspv.txt"
  sed -n '/summary/,$p' "$OUT/bench_spmspv.txt"
fi
if [ "$mode" = compare ] || [ "$mode" = compare-bench ]; then
  echo "== bench spmspv (generated suite, defaults, graph replay)"
  "$D/bin/dbsparse" bench spmspv --no-shared --graph --json "$OUT/bench_spmspv_graph.json" "$@" \
    2>"$OUT/bench_graph_progress.log" | grep -v '^jit' >"$OUT/bench_spmspv_graph.txt"
  sed -n '/summary/,$p' "$OUT/bench_spmspv_graph.txt"
  echo "== bench spmv (generated suite, defaults)"
  "$D/bin/dbsparse" bench spmv --no-shared --precision f32,f64 --json "$OUT/bench_spmv.json" "$@" \
    2>>"$OUT/bench_progress.log" | grep -v '^jit' >"$OUT/bench_spmv.txt"
  sed -n '/summary/,$p' "$OUT/bench_spmv.txt"
fi
if [ "$mode" = tune ]; then
  if [ -z "${SKIP_TESTS:-}" ]; then
    echo "== gpu tests (all)" | tee "$log"
    "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
    tail -3 "$log"
  fi
  rm -f /tmp/dbtune-quick.db
  echo "== dbtune --quick --evaluate (fresh DB)" | tee -a "$log"
  t0=$SECONDS
  "$D/bin/dbtune" --quick --evaluate --db /tmp/dbtune-quick.db "$@" \
    >"$OUT/dbtune_quick.txt" 2>"$OUT/dbtune_progress.log" || status=1
  echo "dbtune --quick --evaluate wall $((SECONDS - t0)) s" | tee -a "$log"
  grep -E "geometric-mean|generated matrices|predicted configs|DB now|interrupted" "$OUT/dbtune_quick.txt" | tee -a "$log"
  echo "== dbtune --quick again (resumes from the stored trials, a fresh budget per matrix and op)" | tee -a "$log"
  t0=$SECONDS
  "$D/bin/dbtune" --quick --db /tmp/dbtune-quick.db "$@" >"$OUT/dbtune_rerun.txt" 2>"$OUT/dbtune_rerun.log"
  echo "dbtune --quick rerun wall $((SECONDS - t0)) s" | tee -a "$log"
  grep -E "geometric-mean|DB now" "$OUT/dbtune_rerun.txt" | tee -a "$log"
  echo "== explore" | tee -a "$log"
  "$D/bin/dbsparse" explore "rmat:scale=16,ef=8" --op spmspv --param th3 --range 0.0001:3.2 --log --points 10 \
    --density 0.01 --db /tmp/dbtune-quick.db --svg "$OUT/explore-spmspv-th3.svg" >"$OUT/explore.txt" 2>&1
  cat "$OUT/explore.txt" | tee -a "$log"
fi
if [ "$mode" = tune-full ]; then
  # The default run as a user starts it (fresh DB, full suite), timed; SIGINT at 585 s so a run
  # that overruns still prints its tables. The DB comes back for `evaluate`.
  rm -f /tmp/dbtune-full.db
  echo "== gpu tests (all)" | tee "$log"
  "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
  tail -3 "$log"
  echo "== dbtune (full default run, fresh DB)" | tee -a "$log"
  t0=$SECONDS
  timeout -s INT 585 "$D/bin/dbtune" --db /tmp/dbtune-full.db "$@" >"$OUT/dbtune_full.txt" 2>"$OUT/dbtune_full.log"
  echo "dbtune exit $?, wall $((SECONDS - t0)) s" | tee -a "$log"
  grep -E "geometric-mean|generated matrices|DB now|interrupted|predicted configs" "$OUT/dbtune_full.txt" | tee -a "$log"
  cp /tmp/dbtune-full.db "$OUT/dbtune-full.db"
fi
if [ "$mode" = evaluate ]; then
  # Leave-one-out over the DB of a `tune-full` run, carried back in as .device/dbtune-full.db.
  echo "== gpu tests (all)" | tee "$log"
  "$D/bin/test_gpu" >>"$log" 2>&1 || status=1
  tail -3 "$log"
  cp "$D/dbtune-full.db" /tmp/dbtune-eval.db
  t0=$SECONDS
  "$D/bin/dbtune" --evaluate-only --db /tmp/dbtune-eval.db "$@" >"$OUT/dbtune_evaluate.txt" 2>"$OUT/dbtune_evaluate.log"
  echo "dbtune --evaluate-only exit $?, wall $((SECONDS - t0)) s" | tee -a "$log"
  grep -E "predicted configs" "$OUT/dbtune_evaluate.txt" | tee -a "$log"
fi
if [ "$mode" = all ] || [ "$mode" = bench ]; then
  echo "== bench spmv"
  "$D/bin/dbsparse" bench spmv --precision f32,f64 --json "$OUT/bench_spmv.json" "$@" \
    2>"$OUT/bench_progress.log" | tee "$OUT/bench_spmv.txt"
fi
exit $status
