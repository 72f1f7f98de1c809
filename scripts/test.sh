#!/usr/bin/env bash
# Quick start, command 2: build, then run every test tier: cpu, nvrtc, gpu (skipped with exit code
# 77 when there is no CUDA device), and the Python package (pytest; its GPU cases skip without a
# device) plus an install test (a fresh virtual environment, `pip install .`, import, one call).
# The rules of the tree run with them: the include layers (scripts/check_layers.py) and the
# formatting (scripts/check_format.sh).
# Python packages come from PyPI into build/pyvenv (scikit-build-core, nanobind, pytest, SciPy).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
VENV=$PWD/build/pyvenv
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p build && python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check scikit-build-core nanobind pytest hypothesis scipy numpy
DBSPARSE_CMAKE_ARGS="-DDBSPARSE_PYTHON=ON -DPython_EXECUTABLE=$VENV/bin/python" bash scripts/build.sh
cd build
ctest --output-on-failure "$@"
