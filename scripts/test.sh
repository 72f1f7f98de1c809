#!/usr/bin/env bash
# Quick start, command 2: build, then run every test tier (cpu, nvrtc, gpu; gpu is skipped with
# exit code 77 when there is no CUDA device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure "$@"
