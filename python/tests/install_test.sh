#!/usr/bin/env bash
# The install test: a fresh virtual environment, `pip install <source>`, import, one call (the
# bundled `dbsparse` program precompiles a kernel; no GPU needed), and the package's precompiled
# kernels (one target here, sm_90, to keep the test's compile short; the wheel's default lists six).
# $1: the source tree, $2: a work folder (its build/ is kept, so a rerun compiles only what changed).
set -euo pipefail
src=$(realpath "$1") work=$(realpath -m "$2")
rm -rf "$work/venv" && mkdir -p "$work"
python3 -m venv "$work/venv"
V=$work/venv/bin
"$V/pip" install -q --disable-pip-version-check scikit-build-core nanobind numpy
"$V/pip" install -q --disable-pip-version-check --no-build-isolation -C build-dir="$work/build" \
  -C cmake.define.DBSPARSE_AOT_ARCHS=sm_90 "$src"
cd "$work"
"$V/python" - <<'PY'
import os, tempfile
import dbsparse
print("dbsparse", dbsparse.__version__, "from", os.path.dirname(dbsparse.__file__))
assert "site-packages" in dbsparse.__file__
os.environ["DBSPARSE_CACHE_DIR"] = tempfile.mkdtemp()
log = dbsparse.precompile(arch="sm_90", ops=["spmv"])
assert "kernels ready" in log, log
print("one call: precompiled spmv for sm_90 with the installed package")
kernels = os.path.join(os.path.dirname(dbsparse.__file__), "share", "dbsparse", "kernels", "sm_90")
shipped = [f for f in os.listdir(kernels) if f.endswith(".cubin")]
assert len(shipped) > 100, (kernels, len(shipped))
print(f"the package carries {len(shipped)} precompiled sm_90 kernels")
# The bundled programs find them beside themselves, as an installed prefix's do.
info = dbsparse._tools._run("dbsparse", ["info"], capture=True)
assert os.path.realpath(os.path.dirname(kernels)) in info, info
print("the bundled dbsparse reads them")
PY
