#!/usr/bin/env bash
# Configures and builds into build/ (Release, what `cmake --install build` installs, stripped).
# Safe to run repeatedly. For symbols, a folder of your own: -B build-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
# DBSPARSE_CMAKE_ARGS: extra cache settings (scripts/test.sh turns the Python extension on).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${DBSPARSE_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$jobs"
