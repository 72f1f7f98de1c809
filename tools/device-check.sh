#!/usr/bin/env bash
# Runs ON the lent H200, in one call: the gpu tests, JIT timing in two fresh processes, a
# compute-sanitizer pass and the SpMV bench. Logs and JSON go to $OUT.
#   tools/device-check.sh [all|tests|bench] [extra bench arguments...]
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}; shift || true
D=$PWD/.device
OUT=${OUT:-/tmp/dbsparse-out}; mkdir -p "$OUT"
export DBSPARSE_MATRICES=$D/matrices DBSPARSE_CACHE_DIR=$D/cache DBSPARSE_DB=/tmp/dbsparse-tuning.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv \
  >"$OUT/gpu.txt" 2>&1
status=0
if [ "$mode" = all ] || [ "$mode" = tests ]; then
  echo "== gpu tests"; "$D/bin/test_gpu" 2>&1 | tee "$OUT/test_gpu.log" | tail -4 || status=1
  echo "== nvrtc + cpu tests"; ("$D/bin/test_nvrtc" && "$D/bin/test_cpu") 2>&1 | tail -3 >"$OUT/test_cpu_nvrtc.log"
  tail -2 "$OUT/test_cpu_nvrtc.log"
  echo "== jit timing (fresh cache: process 1 compiles, process 2 loads from disk)"
  fresh=$(mktemp -d)
  for i in 1 2; do DBSPARSE_CACHE_DIR=$fresh "$D/bin/dbsparse" info --jit-timing --json "$OUT/jit$i.json"; done \
    2>&1 | grep -E "JIT|spmv" | tee "$OUT/jit.log"
  if command -v compute-sanitizer >/dev/null; then
    echo "== compute-sanitizer memcheck"
    compute-sanitizer --tool memcheck --error-exitcode 9 "$D/bin/test_gpu" \
      -tc='SpmvMatchesReferenceOnGeneratedMatrices,SpmvHonoursAlphaAndBeta,SpmvHandlesEdgeShapes' \
      >"$OUT/memcheck.log" 2>&1; echo "memcheck exit $? ($(grep -c 'ERROR SUMMARY: 0' "$OUT/memcheck.log") clean summaries)"
  fi
fi
if [ "$mode" = all ] || [ "$mode" = bench ]; then
  echo "== bench spmv"
  "$D/bin/dbsparse" bench spmv --precision f32,f64 --json "$OUT/bench_spmv.json" "$@" 2>"$OUT/bench.err" \
    | tee "$OUT/bench_spmv.txt"
fi
exit $status
