#!/usr/bin/env bash
# Runs ON the lent GPU: a restructuring's before/after check in the same run.
#   tools/device/house_run.sh gpu       the whole plain gpu suite with the new binaries (Past2To31 too
#                                       unless HOUSE_SKIP_BIG=1), log to $OUT/gpu.log
#   tools/device/house_run.sh ab [ops]  each op's bench on the quick generated suite, old binaries
#                                       (.device/bin-old) and new (.device/bin) alternated per op,
#                                       JSON to $OUT/<op>-{old,new}.json; compare here with
#                                       scripts/bench_ab.py (AB_ORDER="new old" swaps the order)
# prepare.sh fills .device/bin; HOUSE_OLD_BIN names a folder of older binaries to copy to bin-old.
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-gpu}; shift || true
. tools/device/device_env.sh
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
if [ "$mode" = gpu ]; then
  skip=""
  [ -n "${HOUSE_SKIP_BIG:-}" ] && skip="*Past2To31*"
  timeout "${HOUSE_TIMEOUT:-560}" "$D/bin/test_gpu" ${skip:+-tce="$skip"} >"$OUT/gpu.log" 2>&1 || status=1
  grep -E "test cases|assertions|Status|FAILED|ERROR|note:" "$OUT/gpu.log" | tail -12
fi
if [ "$mode" = ab ]; then
  ops=${*:-spmv spmspv bfs spmm spgemm}
  for op in $ops; do
    for side in ${AB_ORDER:-old new}; do
      bin=$D/bin cache=$D/cache
      # The old binaries embed other templates, so their kernels live in a cache of their own.
      [ $side = old ] && bin=$D/bin-old cache=$D/cache-old
      extra=()
      case $op in
        spmm) extra=(--n 32) ;;
        spgemm) extra=(--precision f32) ;;
      esac
      s=$(date +%s)
      DBSPARSE_CACHE_DIR=$cache timeout "${AB_LIMIT:-150}" "$bin/dbsparse" bench "$op" --suite quick --no-shared \
        "${extra[@]}" --json "$OUT/$op-$side.json" >"$OUT/$op-$side.txt" 2>"$OUT/$op-$side.err" || status=1
      echo "$op $side rc=$? $(( $(date +%s) - s )) s"
    done
  done
fi
exit $status
