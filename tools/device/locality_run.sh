#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz`: SpMM and SpMV on
# irregular graphs with and without a row order, their gpu tests, and Nsight Compute on the CSR
# kernel of one graph.
#   tools/device/locality_run.sh tests|spmm|spmm-relu|spmm-configs|spmm-full|spmm-sweep|spmv|window|carveout|gcn|ncu|ncu-spmv|sanitize ...   (in order)
# tests: every Spmm* / Spmv* gpu test; spmm: the graphs set (quick) plus ../shared/matrices at
# N = 32 and 128 with --reorder degree,rcm,community; spmm-full: the full graphs set, N = 32 and 128;
# spmm-sweep: widths N = $SWEEP_N (default 16,32,64,128,256) on the full graphs set (graphs of
# millions of rows among them) and $SWEEP_GRAPHS (default R-MAT 22 scrambled), degree order.
# carveout: SpMM (graphs set) and SpMV (irregular set) under DBSPARSE_L1_CARVEOUT=driver and max-l1.
# ncu: every csr_spmm_rows launch on the scrambled R-MAT 17 at N = 32, plain and in community order.
# ncu-spmv: dbsparse's and cuSPARSE's SpMV kernels on $NCU_MATRIX (default power-law 1M), one call each.
# window: SpmvConfig::window_max_len's gpu tests, its A/B on the irregular set and the quick suite, ncu bytes.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
B=$D/bin
T="timeout ${LOCALITY_TIMEOUT:-300}"
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    tests)
      $T "$B/test_gpu" -tc="${LOCALITY_TESTS:-Spmm*,Spmv*}" >"$OUT/locality-tests.log" 2>&1; echo "tests rc $?"
      grep -B3 -A8 "ERROR" "$OUT/locality-tests.log" | head -40; tail -3 "$OUT/locality-tests.log" ;;
    spmm)
      $T "$B/dbsparse" bench spmm --suite quick --set graphs --n 32,128 --reorder "${REORDERS:-degree,rcm,community}" \
        --json "$OUT/spmm-graphs.json" >"$OUT/spmm-graphs.txt" 2>&1
      echo "$mode rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-graphs.txt" | cut -c1-200 | head -30 ;;
    spmm-relu)
      # C = ReLU(A B): dbsparse's plans with the epilogue against cuSPARSE plus its relu pass.
      $T "$B/dbsparse" bench spmm --suite quick --set graphs --n 32,128 --epilogue relu \
        --json "$OUT/spmm-relu.json" >"$OUT/spmm-relu.txt" 2>&1
      echo "$mode rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-relu.txt" | cut -c1-200 | head -20 ;;
    spmm-configs)
      # The graphs set and the shared matrices under each config of $SPMM_CONFIGS (';'-separated JSON),
      # with the degree order beside the plain CSR rows.
      i=0; IFS=';' read -ra cfgs <<< "${SPMM_CONFIGS:-}"
      for c in "${cfgs[@]}"; do
        i=$((i + 1))
        $T "$B/dbsparse" bench spmm --suite quick --set graphs --n 32,128 --reorder degree --config "$c" \
          --json "$OUT/spmm-config-$i.json" >"$OUT/spmm-config-$i.txt" 2>&1
        echo "config $i $c rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-config-$i.txt" | cut -c1-160
      done ;;
    spmm-full)
      $T "$B/dbsparse" bench spmm --suite full --set graphs --no-shared --n 32,128 \
        --reorder "${REORDERS:-degree,rcm,community}" --json "$OUT/spmm-graphs-full.json" >"$OUT/spmm-graphs-full.txt" 2>&1
      echo "$mode rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-graphs-full.txt" | cut -c1-200 | head -30 ;;
    spmm-sweep)
      # The full graphs set (2M-vertex power-law, community and uniform graphs, R-MAT 20 plain and
      # scrambled among them) at every width of $SWEEP_N, then $SWEEP_GRAPHS (R-MAT 22 scrambled).
      $T "$B/dbsparse" bench spmm --suite full --set graphs --no-shared --n "${SWEEP_N:-16,32,64,128,256}" \
        --reorder degree --json "$OUT/spmm-sweep-full.json" >"$OUT/spmm-sweep-full.txt" 2>&1
      echo "$mode full rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-sweep-full.txt" | cut -c1-200 | head -20
      # shellcheck disable=SC2086  # the graph specs are separate arguments
      $T "$B/dbsparse" bench spmm ${SWEEP_GRAPHS:-rmat:scale=22,ef=16,seed=1,scramble=1} --no-shared \
        --n "${SWEEP_N:-16,32,64,128,256}" --reorder degree --json "$OUT/spmm-sweep-big.json" >"$OUT/spmm-sweep-big.txt" 2>&1
      echo "$mode big rc $?"; grep -E "geomean|WRONG" "$OUT/spmm-sweep-big.txt" | cut -c1-200 | head -20 ;;
    spmv)
      $T "$B/dbsparse" bench spmv rmat:scale=20,ef=16,scramble=1 powerlaw:n=1000000,avg=16,alpha=1.5,max=100000 \
        uniform:n=2000000,d=16 --no-shared --strategy cols-none,cols-degree,classified --json "$OUT/spmv-irregular.json" >"$OUT/spmv-irregular.txt" 2>&1
      # bench spmv's summary is a table (impl x all / regular / irregular), no "geomean" line: print it.
      echo "$mode rc $?"; grep -A8 -E "^summary over" "$OUT/spmv-irregular.txt" | cut -c1-200; grep WRONG "$OUT/spmv-irregular.txt" | head ;;
    window)
      # SpmvConfig::window_max_len (rows up to N long in memory order, 32 a warp): its gpu tests
      # (the Spmv* strategy cases carry 5 window configs), then the A/B against the binned rows on
      # the irregular set and the quick suite with the shared matrices (f32 and f64), then ncu's
      # DRAM bytes and time for classified and window-64 on power-law 1M (the binned rows' figures:
      # docs/decisions/spmv-short-row-window.md).
      $T "$B/test_gpu" -tc='Spmv*' >"$OUT/window-tests.log" 2>&1; echo "window tests rc $?"
      grep -B3 -A8 "ERROR" "$OUT/window-tests.log" | head -30; tail -2 "$OUT/window-tests.log"
      $T "$B/dbsparse" bench spmv rmat:scale=20,ef=16,scramble=1 powerlaw:n=1000000,avg=16,alpha=1.5,max=100000 \
        uniform:n=2000000,d=16 --no-shared --precision f32,f64 --strategy classified,${WINDOWS:-window-16,window-64,window-256} \
        --json "$OUT/window-irregular.json" >"$OUT/window-irregular.txt" 2>&1
      echo "window irregular rc $?"; grep -A12 -E "^summary over" "$OUT/window-irregular.txt" | cut -c1-200; grep WRONG "$OUT/window-irregular.txt" | head
      $T "$B/dbsparse" bench spmv --suite quick --strategy classified,window-64 \
        --json "$OUT/window-quick.json" >"$OUT/window-quick.txt" 2>&1
      echo "window quick rc $?"; grep -A8 -E "^summary over" "$OUT/window-quick.txt" | cut -c1-200; grep WRONG "$OUT/window-quick.txt" | head
      for st in classified window-64; do
        $T ncu --clock-control none -k 'regex:spmv_csr_classified' --metrics dram__bytes_read.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,smsp__inst_executed.sum \
          "$B/dbsparse" bench spmv ${NCU_MATRIX:-powerlaw:n=1000000,avg=16,alpha=1.5,max=100000} --no-shared \
          --strategy $st --reps 1 --batch 1 --warmup 1 >"$OUT/window-ncu-$st.txt" 2>&1
        echo "window ncu $st rc $?"; grep -E "dram__bytes_read|gpu__time_duration|lookup_miss|inst_executed" "$OUT/window-ncu-$st.txt" | head -4
      done ;;
    carveout)
      # The gather kernels' L1 preference (DBSPARSE_L1_CARVEOUT, runtime/gpu/l1_carveout.hpp): SpMM
      # on the graphs set and the shared matrices, SpMV on the irregular set, under the driver's
      # carveout and under max-l1, cuSPARSE timed in both runs (its change is the noise).
      for pol in driver max-l1; do
        DBSPARSE_L1_CARVEOUT=$pol $T "$B/dbsparse" bench spmm --suite quick --set graphs --n 32,128 \
          --json "$OUT/carveout-spmm-$pol.json" >"$OUT/carveout-spmm-$pol.txt" 2>&1
        echo "carveout spmm $pol rc $?"; grep -E "geomean|WRONG" "$OUT/carveout-spmm-$pol.txt" | cut -c1-200 | head -8
        DBSPARSE_L1_CARVEOUT=$pol $T "$B/dbsparse" bench spmv rmat:scale=20,ef=16,scramble=1 \
          powerlaw:n=1000000,avg=16,alpha=1.5,max=100000 uniform:n=2000000,d=16 --no-shared \
          --strategy cols-none,cols-degree,classified --json "$OUT/carveout-spmv-$pol.json" >"$OUT/carveout-spmv-$pol.txt" 2>&1
        echo "carveout spmv $pol rc $?"; grep -A8 -E "^summary over" "$OUT/carveout-spmv-$pol.txt" | cut -c1-200
      done ;;
    ncu)
      # Every csr_spmm_rows launch of one bench: auto, csr and csr-community, 2 calls each (and their
      # pieces passes); the log names each launch's grid, so plain and reordered are told apart.
      # $NCU_CARVEOUT: DBSPARSE_L1_CARVEOUT for the profiled run (LaunchStats shows the carveout taken).
      DBSPARSE_L1_CARVEOUT=${NCU_CARVEOUT:-driver} $T ncu --clock-control none -k regex:csr_spmm_rows \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
        --section LaunchStats \
        "$B/dbsparse" bench spmm ${NCU_MATRIX:-rmat:scale=17,ef=16,scramble=1} --no-shared --no-baselines --n 32 \
        --reorder community --reps 1 --batch 1 --warmup 1 >"$OUT/ncu-spmm.txt" 2>&1
      echo "ncu rc $?"
      grep -E "csr_spmm_rows|Duration|L1/TEX Hit|L2 Hit|Achieved Occupancy|Compute \(SM\) Throughput|DRAM Throughput|Shared Memory Configuration Size" \
        "$OUT/ncu-spmm.txt" | cut -c1-150 | head -60 ;;
    ncu-spmv)
      # SpMV on $NCU_MATRIX (default power-law 1M, its worst irregular matrix, docs/STATUS.md):
      # dbsparse's classified kernel and cuSPARSE's, one call each after a warm-up, so the two
      # are compared launch for launch (L1 / L2 hits, sectors, stalls, occupancy).
      $T ncu --clock-control none -k 'regex:spmv|csr|Csr' \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
        --section LaunchStats --section SchedulerStats \
        "$B/dbsparse" bench spmv ${NCU_MATRIX:-powerlaw:n=1000000,avg=16,alpha=1.5,max=100000} --no-shared \
        --reps 1 --batch 1 --warmup 1 >"$OUT/ncu-spmv.txt" 2>&1
      echo "ncu-spmv rc $?"
      grep -E "^  [a-zA-Z_].*\(|Duration|L1/TEX Hit|L2 Hit|Achieved Occupancy|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Registers Per|No Eligible|Issued Warp" \
        "$OUT/ncu-spmv.txt" | cut -c1-150 | head -80 ;;
    gcn)
      # The GCN forward pass in each row order of $GCN_ORDERS (default none and degree; community
      # never paid back in 100 passes), the order's host time amortised over 100 passes;
      # with the ReLU fused into dbsparse's first SpMM and, for the ablation, as its own pass
      # ($GCN_RELU: fused, separate).
      for g in ${GCN_GRAPHS:-rmat:scale=17,ef=16,scramble=1 powerlaw:n=200000,avg=16,alpha=1.5,max=20000 cit-HepPh}; do
        for order in ${GCN_ORDERS:-none degree}; do
          for relu in ${GCN_RELU:-fused separate}; do
            f="$OUT/gcn-$(echo "$g" | tr ':=,' '___')-$order-$relu${DBSPARSE_L1_CARVEOUT:+-$DBSPARSE_L1_CARVEOUT}"
            flag=--fuse-relu
            [ "$relu" = fused ] || flag=--no-fuse-relu
            $T "$B/dbsparse" gcn "$g" --reorder "$order" $flag --json "$f.json" >"$f.txt" 2>&1
            echo "gcn $g $order relu $relu rc $? $(grep -E 'forward \(end to end\)|amortised' "$f.txt" | tr -s ' ' | tr '\n' ' ')"
          done
        done
      done ;;
    sanitize)
      for tool in memcheck racecheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_gpu" -tc="${SAN_TESTS:-*Reorder*}" \
          >"$OUT/locality-$tool.log" 2>&1
        echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/locality-$tool.log" | tail -1)"
      done ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
