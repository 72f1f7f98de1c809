#!/usr/bin/env bash
# Runs ON the lent GPU machine after `tar xzf .devpack/device.tgz` (prepare.sh --python packed .device/py):
# builds dbsparse._core for the machine's Python 3.12 (torch, CuPy, SciPy) against the static library
# built here, then runs pytest over python/tests, the examples and `python -m dbsparse.bench`.
#   tools/device/python_run.sh [build] [tests] [examples] [bench] [llm] [gnn]
# LLM_ARGS: the arguments of `python -m dbsparse.bench llm` (default: its defaults, Llama-3.1-8B shapes).
# GNN_ARGS: the arguments of `python -m dbsparse.bench gnn` (default: its defaults, Cora to ogbn-arxiv sizes).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tools/device/device_env.sh
P=$D/py
export DBSPARSE_DBSPARSE=$D/bin/dbsparse DBSPARSE_DBTUNE=$D/bin/dbtune
PY=${PY:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PATH=/opt/torch/.venv/bin:$PATH
B=/tmp/dbs-pyb
export PYTHONPATH=$B/python:$P/site
for mode in "$@"; do
  t0=$(date +%s)
  case $mode in
    build)
      cmake -S tools/device/py_ext -B $B -G Ninja -DDBS_PACK=$P -DDBS_VERSION="$(cat $P/version)" \
        -DPython_EXECUTABLE=$PY -Dnanobind_DIR=$P/site/nanobind/cmake >"$OUT/py-build.log" 2>&1 &&
      cmake --build $B -j 16 >>"$OUT/py-build.log" 2>&1; echo "build rc $?"; tail -3 "$OUT/py-build.log" ;;
    tests)  # PYTEST_K: only the tests pytest -k selects
      $PY -m pytest -q -rs python/tests ${PYTEST_K:+-k "$PYTEST_K"} >"$OUT/pytest.log" 2>&1; echo "pytest rc $?"
      tail -15 "$OUT/pytest.log" ;;
    examples)
      for e in gcn_torch gnn_train bfs_scipy sparse_mlp; do
        $PY python/examples/$e.py >"$OUT/example-$e.log" 2>&1; echo "$e rc $?"; tail -4 "$OUT/example-$e.log"
      done ;;
    bench) $PY -m dbsparse.bench --json "$OUT/py-bench.json" >"$OUT/py-bench.txt" 2>&1; echo "bench rc $?"; cat "$OUT/py-bench.txt" ;;
    llm) $PY -m dbsparse.bench llm ${LLM_ARGS:-} --json "$OUT/py-bench-llm.json" >"$OUT/py-bench-llm.txt" 2>&1
      echo "bench llm rc $?"; cat "$OUT/py-bench-llm.txt" ;;
    gnn) $PY -m dbsparse.bench gnn ${GNN_ARGS:-} --json "$OUT/py-bench-gnn.json" >"$OUT/py-bench-gnn.txt" 2>&1
      echo "bench gnn rc $?"; cat "$OUT/py-bench-gnn.txt" ;;
    *) echo "unknown mode $mode"; exit 2 ;;
  esac
  echo "== $mode $(( $(date +%s) - t0 )) s"
done
