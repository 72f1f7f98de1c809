#!/usr/bin/env bash
# Runs ON the lent GPU machine: the autotuner's checks (docs/decisions/device-profile.md,
# auto-selection). Logs and JSON to $OUT (at most 8 files come back: tar them).
#   tools/device/autotune_run.sh tests      gpu tests of the profile, plan trials, check-auto, spmm, bfs, decode
#   tools/device/autotune_run.sh profile    dbsparse profile --measure (stored in the run's DB), --json
#   tools/device/autotune_run.sh decode     decode-bench llama-3.1-8b f16 at 1 and 0.5 of activations
#   tools/device/autotune_run.sh auto SUITE bench --check-auto of spmm, bfs, spmspv, spmv on SUITE:
#                                           quick (generated), real (../shared/matrices), public
#   tools/device/autotune_run.sh spmv-sweep SUITE  bench spmv f32,f64 over the scalar-bin and lane
#                                           strategies (SPMV_STRATEGIES overrides the list)
#   tools/device/autotune_run.sh first-call dbsparse first-call (DBSPARSE_AOT_DIR, when set, is read)
# Several modes in one call: tools/device/autotune_run.sh tests profile decode
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
# BIN: another build's dbsparse for the auto mode (a branch's, carried beside .device), TAG: a
# suffix for its files, so two builds' check-auto runs come back side by side.
B=${BIN:-$D/bin/dbsparse}
TAG=${TAG:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/card.txt" 2>&1
# Each bench's suite arguments and matrix folder.
suite_args() {
  case $1 in
    quick) echo "--suite quick --no-shared" ;;
    real) echo "--suite none" ;;
    public) echo "--suite none" ;;
  esac
}
while [ $# -gt 0 ]; do
  mode=$1; shift
  case $mode in
    tests)
      timeout 400 "$D/bin/test_gpu" -tc="${TESTS:-DeviceProfile*,*PlanTrial*,CheckAuto*,Spmm*,Bfs*,*Decode*,SparseLinear*}" \
        >"$OUT/tests.log" 2>&1
      echo "tests exit $?"; tail -3 "$OUT/tests.log" ;;
    profile)
      "$B" profile --measure --json "$OUT/profile.json" >"$OUT/profile.txt" 2>&1
      echo "profile exit $?"; cat "$OUT/profile.txt" ;;
    decode)
      timeout 200 "$B" decode-bench --model llama-3.1-8b --dtype f16 --act-density 1,0.5 \
        --json "$OUT/decode.json" >"$OUT/decode.txt" 2>&1
      echo "decode exit $?"; grep -iE "auto|gate|down|mlp" "$OUT/decode.txt" | head -30 ;;
    auto)
      set_name=$1; shift
      mats=$DBSPARSE_MATRICES
      [ "$set_name" = public ] && mats=$DBSPARSE_PUBLIC_MATRICES
      for op in ${AUTO_OPS:-spmm bfs spmspv spmv}; do
        extra=""
        [ $op = spmm ] && extra="--n 32,128"
        DBSPARSE_MATRICES=$mats timeout ${AUTO_TIMEOUT:-120} "$B" bench $op $(suite_args "$set_name") $extra \
          --check-auto --json "$OUT/ca_${op}_${set_name}$TAG.json" >"$OUT/ca_${op}_${set_name}$TAG.txt" 2>&1
        echo "$op $set_name$TAG exit $?"; grep -A3 -i "check-auto\|share" "$OUT/ca_${op}_${set_name}$TAG.txt" | tail -4
      done ;;
    spmv-sweep)
      set_name=$1; shift
      mats=$DBSPARSE_MATRICES
      [ "$set_name" = public ] && mats=$DBSPARSE_PUBLIC_MATRICES
      st=${SPMV_STRATEGIES:-auto,scalar-max-2,scalar-max-4,scalar-max-6,uniform,uniform-scalar-max-4,scalar,vector,vector-l2,window-8}
      DBSPARSE_MATRICES=$mats timeout ${AUTO_TIMEOUT:-120} "$B" bench spmv $(suite_args "$set_name") --precision f32,f64 \
        --strategy "$st" --json "$OUT/spmv_${set_name}$TAG.json" >"$OUT/spmv_${set_name}$TAG.txt" 2>&1
      echo "spmv-sweep $set_name$TAG exit $?" ;;
    first-call)
      timeout 120 "$B" first-call --json "$OUT/first-call$TAG.json" >"$OUT/first-call$TAG.txt" 2>&1
      echo "first-call exit $?"; cat "$OUT/first-call$TAG.txt" ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
done
