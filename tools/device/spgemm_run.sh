#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz`: the SpGEMM gpu tests,
# the fresh-product bench on the quick and full suites against cuSPARSE, and Nsight Compute timings of
# every kernel of one fresh product (power-law 1M, R-MAT 14 by default; SPGEMM_NCU_MATRICES overrides).
#   tools/device/spgemm_run.sh tests|quick|full|two-pass|shared|ncu|sanitize|dbtune ...   (several modes in order)
# dbtune: the default dbtune job on the quick suite (every op tuned by default, spgemm among them).
# configs: the quick suite (no applications) under each config of $SPGEMM_CONFIGS (';'-separated JSON).
# two-pass: the quick suite and the full suite's three smaller matrices with --two-pass (every first
# run does its symbolic phase), to set against the default one-pass rows of quick/full.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
NCU_M=${SPGEMM_NCU_MATRICES:-powerlaw:alpha=1.5,avg=5,max=5000,n=1000000,seed=1 rmat:ef=8,scale=14,scramble=0,seed=1}
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    tests)
      "$B/test_gpu" -tc='Spgemm*,Square*,Contract*,Mcl*,Triangle*' >"$OUT/spgemm-tests.log" 2>&1; echo "tests rc $?"
      tail -3 "$OUT/spgemm-tests.log" ;;
    quick|full)
      "$B/dbsparse" bench spgemm --suite $mode --no-shared --precision f32 --mcl-iters ${SPGEMM_MCL_ITERS:-3} \
        --json "$OUT/spgemm-$mode.json" >"$OUT/spgemm-$mode.txt" 2>&1; echo "$mode rc $?"
      grep -E "summary|fresh parts" "$OUT/spgemm-$mode.txt" | cut -c1-230 ;;
    two-pass)
      "$B/dbsparse" bench spgemm --no-shared --precision f32 --mcl-iters 0 --two-pass \
        roadnet:n=100000,seed=1 powerlaw:alpha=1.5,avg=5,max=2000,n=100000,seed=1 stencil3d:n=30,points=27 \
        rmat:ef=8,scale=14,scramble=0,seed=1 uniform:d=8,n=100000,seed=1 roadnet:n=1393383,seed=1 \
        powerlaw:alpha=1.5,avg=5,max=5000,n=1000000,seed=1 uniform:d=8,n=1000000,seed=1 \
        --json "$OUT/spgemm-two-pass.json" >"$OUT/spgemm-two-pass.txt" 2>&1; echo "two-pass rc $?"
      grep -E "summary" "$OUT/spgemm-two-pass.txt" | cut -c1-230 ;;
    shared)
      "$B/dbsparse" bench spgemm --suite none --precision f32 --mcl-iters 0 \
        --json "$OUT/spgemm-shared.json" >"$OUT/spgemm-shared.txt" 2>&1; echo "shared rc $?"
      grep -E "summary" "$OUT/spgemm-shared.txt" | cut -c1-230 ;;
    ncu)
      i=0
      for m in $NCU_M; do
        i=$((i + 1))
        ncu --clock-control none -k regex:spgemm --metrics gpu__time_duration.sum \
          "$B/dbsparse" square "$m" --no-check --reps 1 >"$OUT/spgemm-ncu-$i.txt" 2>&1
        echo "== $m"
        awk '/spgemm_[a-z_]*</{match($0,/spgemm_[a-z_]*<[^(]*/); k=substr($0,RSTART,RLENGTH)}
             /gpu__time_duration/{v=$NF; if ($(NF-1)=="ms") v*=1000; if ($(NF-1)=="ns") v/=1000; t[k]+=v; c[k]++}
             END{for (k in t) printf "%10.1f us %4d x %s\n", t[k], c[k], k}' "$OUT/spgemm-ncu-$i.txt" | sort -rn | head -24
      done ;;
    sanitize)
      "$B/test_gpu" -tc='Triangle*' >/dev/null 2>&1  # kernels into the cache first
      compute-sanitizer --tool memcheck --error-exitcode 9 "$B/test_gpu" \
        -tc='Triangle*,SpgemmGpuOnePassFirstRunMatchesReferenceAndTheTwoPassRun,SpgemmGpuMatchesReferenceWhenBFitsGroup2sDenseTable,SpgemmGpuMatchesReferenceOnDenseAndHashedGlobalRowsOverSeveralBlocks' \
        >"$OUT/spgemm-memcheck.log" 2>&1
      echo "memcheck rc $? $(grep 'ERROR SUMMARY' "$OUT/spgemm-memcheck.log" | tail -1)"
      compute-sanitizer --tool racecheck --error-exitcode 9 "$B/test_gpu" \
        -tc='SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup0,SpgemmGpuMatchesReferenceWhenEveryRowIsInGroup1,SpgemmGpuMatchesReferenceWhenBFitsGroup2sDenseTable' \
        >"$OUT/spgemm-racecheck.log" 2>&1
      echo "racecheck rc $? $(grep 'RACECHECK SUMMARY' "$OUT/spgemm-racecheck.log" | tail -1)" ;;
    configs)
      default_cfgs='{"b1":1024,"t1":2048};{"b1":1024,"t1":2048,"b0":64,"t0":128}'
      IFS=';' read -ra cfgs <<<"${SPGEMM_CONFIGS:-$default_cfgs}"
      n=0
      for c in "${cfgs[@]}"; do
        n=$((n + 1))
        "$B/dbsparse" bench spgemm --suite quick --no-shared --precision f32 --mcl-iters 0 --config "$c" \
          >"$OUT/spgemm-config-$n.txt" 2>&1; echo "config $n $c rc $?"
        awk '/^[a-z0-9]+:/{print "  " $1, "first", $7, "steady", $8, "x", $10}' "$OUT/spgemm-config-$n.txt"
        grep -E "^f32 summary" "$OUT/spgemm-config-$n.txt" | cut -c1-160
      done ;;
    dbtune)
      "$B/dbtune" --quick --no-shared --db /tmp/dbtune-quick.db >"$OUT/dbtune-quick.txt" 2>&1; echo "dbtune rc $?"
      grep -vE "^\s*$" "$OUT/dbtune-quick.txt" | grep -iE "spgemm|DB now|kernels:|skipped|error" | cut -c1-200 | head -30 ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
