#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz`: the graph-capture
# and SpMSpV gpu tests, SpMSpV's bench with and without programmatic dependent launch (each bench
# ends with the op's fixed-cost lines: smallest calls next to an empty kernel launch), the BFS
# fixed cost, and compute-sanitizer over the captured and PDL paths.
#   tools/device/fixed_cost_run.sh tests|spmspv|spmspv-nopdl|spmspv-fused|spmspv-configs|spmspv-full|bfs|bfs-big|spmv|spmm|spgemm|ncu|ncu-compute|sanitize ...
# (in order). spmspv-full: the full suite (the issue's ratios); bfs-big: the 2048^2 grid's level and
# RMAT-22's GTEPS; ncu: each kernel's device time for the one-entry SpMSpV calls and a BFS search.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
# A hung kernel (a grid barrier that never releases) ends its mode, not the whole call.
T="timeout 240"
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    tests)
      $T "$B/test_gpu" -tc="${FIXED_TESTS:-*Captured*,CudaGraph*,Spmspv*}" >"$OUT/fixed-tests.log" 2>&1; echo "tests rc $?"
      grep -B3 -A8 "ERROR" "$OUT/fixed-tests.log" | head -40; tail -3 "$OUT/fixed-tests.log" ;;
    spmspv|spmspv-nopdl|spmspv-fused)
      extra=(); [ "$mode" = spmspv-nopdl ] && extra=(--config '{"pdl":0}'); [ "$mode" = spmspv-fused ] && extra=(--fused)
      $T "$B/dbsparse" bench spmspv --suite quick --no-shared "${extra[@]}" --json "$OUT/$mode.json" >"$OUT/$mode.txt" 2>&1
      echo "$mode rc $?"; grep -E "summary|geomean|fixed cost|^  (empty|spmspv)" "$OUT/$mode.txt" | cut -c1-200 | head -20 ;;
    spmspv-configs)
      # The quick suite under each config of $SPMSPV_CONFIGS (';'-separated JSON), e.g. compute grid sizes.
      i=0; IFS=';' read -ra cfgs <<< "${SPMSPV_CONFIGS:-}"
      for c in "${cfgs[@]}"; do
        i=$((i + 1))
        $T "$B/dbsparse" bench spmspv --suite "${SPMSPV_SUITE:-quick}" --no-shared --config "$c" \
          --json "$OUT/spmspv-config-$i.json" >"$OUT/spmspv-config-$i.txt" 2>&1
        echo "config $i $c rc $?"; grep -A6 "^summary" "$OUT/spmspv-config-$i.txt" | cut -c1-120
      done ;;
    spmspv-full)
      $T "$B/dbsparse" bench spmspv --suite full --no-shared --json "$OUT/spmspv-full.json" >"$OUT/spmspv-full.txt" 2>&1
      echo "$mode rc $?"; grep -E "summary|geomean|worst|fixed cost|^  (empty|spmspv)" "$OUT/spmspv-full.txt" | cut -c1-200 | head -24 ;;
    bfs-big)
      $T "$B/dbsparse" bench bfs stencil2d:n=2048 rmat:scale=22,ef=16 --no-shared --json "$OUT/bfs-big.json" \
        >"$OUT/bfs-big.txt" 2>&1
      echo "$mode rc $?"; grep -vE "^\[" "$OUT/bfs-big.txt" | cut -c1-200 | head -24 ;;
    ncu)
      $T ncu --clock-control none -k regex:'spmspv|empty' --metrics gpu__time_duration.sum \
        "$B/dbsparse" bench spmspv uniform:n=1000000,d=8 --density 0.0001 --no-shared --no-baselines \
        --reps 1 --batch 1 --warmup 1 >"$OUT/ncu-spmspv.txt" 2>&1
      $T ncu --clock-control none -k regex:bfs_search --metrics gpu__time_duration.sum \
        "$B/dbsparse" bench bfs stencil2d:n=300 --no-shared --no-baselines --reps 1 --batch 1 --warmup 1 \
        >"$OUT/ncu-bfs.txt" 2>&1
      for f in ncu-spmspv ncu-bfs; do
        echo "== $f"
        awk '/(spmspv_|bfs_|empty_)[a-z_]*/{match($0,/(spmspv_|bfs_|empty_)[a-z_]*/); k=substr($0,RSTART,RLENGTH)}
             /gpu__time_duration/{v=$NF; if ($(NF-1)=="ms") v*=1000; if ($(NF-1)=="ns") v/=1000; t[k]+=v; c[k]++; if (c[k]<=1 || v<m[k]) m[k]=v}
             END{for (k in t) printf "%10.2f us total %5d x  min %8.2f us  %s\n", t[k], c[k], m[k], k}' "$OUT/$f.txt" | sort -rn | head
      done ;;
    ncu-compute)
      # One spmspv_compute launch at 1e-4 in detail: where its microseconds go with almost no work.
      $T ncu --clock-control none -k regex:spmspv_compute --launch-skip 8 --launch-count 1 \
        --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
        --section SchedulerStats "$B/dbsparse" bench spmspv uniform:n=1000000,d=8 --density 0.0001 --no-shared \
        --no-baselines --reps 1 --batch 1 --warmup 1 >"$OUT/ncu-compute.txt" 2>&1
      grep -E "Duration|Registers|Block Limit|Achieved Occupancy|Grid Size|Waves|Stall|Issued Warp|No Eligible" \
        "$OUT/ncu-compute.txt" | head -30 ;;
    bfs|spmv|spmm|spgemm)
      $T "$B/dbsparse" bench $mode stencil2d:n=300 --no-shared --json "$OUT/$mode-fixed.json" >"$OUT/$mode-fixed.txt" 2>&1
      echo "$mode rc $?"; grep -A4 "fixed cost" "$OUT/$mode-fixed.txt" | cut -c1-200 ;;
    sanitize)
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_gpu" \
          -tc="${SAN_TESTS:-*Captured*,CudaGraph*,SpmspvSparseOutputCapturedInACudaGraphMatchesReferenceOnEveryReplay}" \
          >"$OUT/fixed-$tool.log" 2>&1
        echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/fixed-$tool.log" | tail -1)"
      done ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
