#!/usr/bin/env bash
# Runs ON the lent H200 after `tar xzf .devpack/device.tgz` (issue 34's calls): the graph-capture
# and SpMSpV gpu tests, SpMSpV's bench with and without programmatic dependent launch (each bench
# ends with the op's fixed-cost lines: smallest calls next to an empty kernel launch), the BFS
# fixed cost, and compute-sanitizer over the captured and PDL paths.
#   tools/device/fixed_cost_run.sh tests|spmspv|spmspv-nopdl|bfs|spmv|sanitize ...   (in order)
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    tests)
      "$B/test_gpu" -tc="${FIXED_TESTS:-*Captured*,CudaGraph*,Spmspv*}" >"$OUT/fixed-tests.log" 2>&1; echo "tests rc $?"
      grep -B3 -A8 "ERROR" "$OUT/fixed-tests.log" | head -40; tail -3 "$OUT/fixed-tests.log" ;;
    spmspv|spmspv-nopdl)
      extra=(); [ "$mode" = spmspv-nopdl ] && extra=(--config '{"pdl":0}')
      "$B/dbsparse" bench spmspv --suite quick --no-shared "${extra[@]}" --json "$OUT/$mode.json" >"$OUT/$mode.txt" 2>&1
      echo "$mode rc $?"; grep -E "summary|geomean|fixed cost|^  (empty|spmspv)" "$OUT/$mode.txt" | cut -c1-200 | head -20 ;;
    bfs|spmv)
      "$B/dbsparse" bench $mode stencil2d:n=300 --no-shared --json "$OUT/$mode-fixed.json" >"$OUT/$mode-fixed.txt" 2>&1
      echo "$mode rc $?"; grep -A4 "fixed cost" "$OUT/$mode-fixed.txt" | cut -c1-200 ;;
    sanitize)
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_gpu" \
          -tc='*Captured*,CudaGraph*,SpmspvSparseOutputCapturedInACudaGraphMatchesReferenceOnEveryReplay' \
          >"$OUT/fixed-$tool.log" 2>&1
        echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/fixed-$tool.log" | tail -1)"
      done ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
