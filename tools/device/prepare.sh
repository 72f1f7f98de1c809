#!/usr/bin/env bash
# Runs HERE before a device call: builds, then fills .device/ (git-ignored, named in `carry`) with
# the binaries, a copy of ../shared/matrices and a kernel cache precompiled for sm_90, so the H200
# spends no time building or compiling. See DEVICE.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/build.sh >/dev/null
rm -rf .device/bin && mkdir -p .device/bin .device/matrices .device/cache
cp build/dbsparse build/dbtune build/tests/test_gpu build/tests/test_cpu build/tests/test_nvrtc .device/bin/
strip --strip-debug .device/bin/*
if [ -d ../shared/matrices ]; then cp -u ../shared/matrices/*.mtx .device/matrices/; fi
# spmv only: NVRTC here takes ~1 s a kernel for the big spmspv variants, about 30x the H200 host.
rm -rf .device/cache && mkdir -p .device/cache
DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op spmv >/dev/null
DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op bfs >/dev/null
du -sh .device
# The tree plus .device passes the 64 MiB a device call carries once the matrices are in: pack
# .device (19.5 MB, 2026-12-01), carry [".devpack"] and start the call with
# `tar xzf .devpack/device.tgz && ...`.
mkdir -p .devpack && tar czf .devpack/device.tgz .device && du -sh .devpack/device.tgz
