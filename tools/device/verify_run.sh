#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz` (prepare.sh, PREPARE_AOT=1): what
# session 40 left unmeasured, in one call, each step bounded; every log ends up in $OUT/all.tgz
# (a call brings back at most 8 files).
#   tools/device/verify_run.sh [gnn] [spmv] [dbtune] [py] ...   (default: all four, in that order)
# gnn:    gpu tests of issue 60 (SpMM reductions, SDDMM) and s39's fixes; bench sddmm and spmm on
#         six real graphs against cuSPARSE (f32, k / N = 32, 128)
# spmv:   gpu tests Spmv*; check-auto of spmv and bfs on public, real and quick (the small-matrix
#         scalar bound, decisions/spmv-defaults.md)
# dbtune: `dbtune --quick` as on a fresh machine: empty kernel cache and DB, the AOT kernels only,
#         no shared matrices (issue 57's 150 s target)
# py:     the Python package built there; pytest on the gnn/nn/leak cases; bench gnn; bench llm --compile
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
M=$D/matrices P=$D/public-matrices
G="$M/Cora.mtx $M/wiki-Vote.mtx $M/cit-HepPh.mtx $M/luxembourg_osm.mtx $M/cage9.mtx $P/NotreDame_www.mtx.gz"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/card.txt"
[ $# -gt 0 ] || set -- gnn spmv dbtune py
for mode in "$@"; do
  case $mode in
    gnn)
      timeout 150 "$D/bin/test_gpu" -tc='DecodeRing*,SpmmReduce*,SpmmMaxAndMin*,Sddmm*,BenchSddmm*,BenchSpmmReduce*' \
        >"$OUT/tests-gnn.log" 2>&1
      echo "gnn tests exit $?: $(grep -E 'test cases' "$OUT/tests-gnn.log")"
      timeout 60 "$D/bin/dbsparse" bench sddmm $G --n 32,128 --precision f32 --json "$OUT/sddmm.json" >"$OUT/sddmm.txt" 2>&1
      echo "sddmm exit $?"; grep -E "geomean" "$OUT/sddmm.txt"
      timeout 90 "$D/bin/dbsparse" bench spmm $G --n 32,128 --precision f32 --json "$OUT/spmm.json" >"$OUT/spmm.txt" 2>&1
      echo "spmm exit $?"; grep -E "geomean" "$OUT/spmm.txt" ;;
    spmv)
      timeout 100 "$D/bin/test_gpu" -tc='Spmv*' >"$OUT/tests-spmv.log" 2>&1
      echo "spmv tests exit $?: $(grep -E 'test cases' "$OUT/tests-spmv.log")"
      AUTO_OPS="spmv bfs" AUTO_TIMEOUT=90 bash tools/device/autotune_run.sh auto public auto real auto quick ;;
    dbtune)
      rm -rf /tmp/fresh-cache /tmp/fresh.db && mkdir -p /tmp/fresh-cache
      t=$(date +%s)
      DBSPARSE_CACHE_DIR=/tmp/fresh-cache DBSPARSE_DB=/tmp/fresh.db DBSPARSE_MATRICES=/nonexistent \
        timeout 300 "$D/bin/dbtune" --quick >"$OUT/dbtune-quick.txt" 2>&1
      echo "dbtune --quick exit $? in $(( $(date +%s) - t )) s (AOT ${DBSPARSE_AOT_DIR:-none})"
      grep -E "kernels:|device profile" "$OUT/dbtune-quick.txt" | tail -4 ;;
    py)
      PYTEST_K="leak or gnn or reduce or sddmm or nn" timeout 200 bash tools/device/python_run.sh build tests
      GNN_ARGS="--reps 3 --epochs 10" timeout 90 bash tools/device/python_run.sh gnn
      LLM_ARGS="--reps 20 --prefill-reps 3 --compile --densities 1,0.5,0.3" timeout 150 bash tools/device/python_run.sh llm ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode done at $(el) s"
done
(cd "$OUT" && tar czf /tmp/verify-all.tgz --exclude=all.tgz . && find . -maxdepth 1 -type f ! -name card.txt -delete &&
  mv /tmp/verify-all.tgz all.tgz)
