#!/usr/bin/env bash
# Runs HERE before a device call: builds, then fills .device/ (git-ignored, named in `carry`) with
# the binaries, a copy of ../shared/matrices (the default real-matrix folder, when present), the
# fetched public matrices (scripts/fetch_matrices.py, when present) and a
# kernel cache precompiled for sm_90, so the GPU machine spends no time building or compiling.
# See docs/DEVELOPING.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/build.sh >/dev/null
rm -rf .device/bin && mkdir -p .device/bin .device/matrices .device/cache
cp build/dbsparse build/dbtune build/tests/test_gpu .device/bin/
# test_cpu and test_nvrtc (check.sh tests runs them there too) take ~6 MB of the packed 64 MiB a
# call carries: PREPARE_CPU_TESTS=0 leaves them out.
if [ "${PREPARE_CPU_TESTS:-1}" != 0 ]; then cp build/tests/test_cpu build/tests/test_nvrtc .device/bin/; fi
strip --strip-debug .device/bin/*
# An earlier build's binaries for a same-run before/after (tools/device/house_run.sh ab).
rm -rf .device/bin-old
rm -rf .device/cache-old
if [ -n "${HOUSE_OLD_BIN:-}" ]; then mkdir -p .device/bin-old && cp "$HOUSE_OLD_BIN"/* .device/bin-old/; fi
# ... and their kernel cache, precompiled by them (HOUSE_OLD_CACHE), if there is one.
if [ -n "${HOUSE_OLD_CACHE:-}" ]; then cp -r "$HOUSE_OLD_CACHE" .device/cache-old; fi
if [ -d ../shared/matrices ]; then cp -u ../shared/matrices/*.mtx .device/matrices/; fi
# The public matrices of scripts/fetch_matrices.py (docs/MATRICES.md), when fetched: already
# gzip'ed (the reader takes .mtx.gz), about 12 MB. PREPARE_PUBLIC=0 leaves them out.
PUBLIC=${DBSPARSE_PUBLIC_MATRICES:-$HOME/.cache/dbsparse/public-matrices}
rm -rf .device/public-matrices
if [ "${PREPARE_PUBLIC:-1}" != 0 ] && [ -n "$(ls "$PUBLIC"/*.mtx.gz 2>/dev/null)" ]; then
  mkdir -p .device/public-matrices && cp "$PUBLIC"/*.mtx.gz .device/public-matrices/
  echo "public matrices: $(ls .device/public-matrices | wc -l) files, $(du -sh .device/public-matrices | cut -f1)"
fi
# spmv, bfs and spmm: NVRTC here takes ~1 s a kernel for the big spmspv variants, about 30x the GPU machine's host.
rm -rf .device/cache .device/aot && mkdir -p .device/cache
# PREPARE_CACHE: a cache already precompiled for sm_90 by this build (`dbsparse precompile`), copied
# instead of compiled again. PREPARE_AOT=1: only the kernels the default configs and auto choices
# reach, as the AOT folder an installed package carries (~2 min here, ~10 MB; device_env.sh points
# DBSPARSE_AOT_DIR at it): what a user's first calls load; a tuned or forced variant compiles there.
if [ "${PREPARE_AOT:-0}" = 1 ]; then
  DBSPARSE_CACHE_DIR=$(mktemp -d) build/dbsparse precompile --aot "$PWD/.device/aot" --arch sm_90 >/dev/null
elif [ -n "${PREPARE_CACHE:-}" ]; then
  cp -r "$PREPARE_CACHE"/. .device/cache/
else
  DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op spmv >/dev/null
  DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op bfs >/dev/null
  # SpMM too (~2 min here, 12 MB): a fresh GPU machine spent its tests' whole 170 s compiling SpMM
  # kernels.
  DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op spmm >/dev/null
  # SpGEMM and SpMSpV as well (~2 min here, +6.6 MB packed): sixteen sanitizer processes at once
  # otherwise each compile the same kernels on the device.
  DBSPARSE_CACHE_DIR=$PWD/.device/cache build/dbsparse precompile --arch sm_90 --op spgemm spmspv >/dev/null
fi
# The Python extension is built ON the device (its Python 3.12; see tools/device/python_run.sh):
# carry the static library, the headers it was built with, the sqlite/zlib archives and the wheels
# of nanobind, pytest and hypothesis (the device reaches no registry), unpacked.
rm -rf .device/py && mkdir -p .device/py/include .device/py/site
cp build/libdbsparse.a /usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/x86_64-linux-gnu/libz.a .device/py/
cp -r /usr/include/fmt /usr/include/nlohmann .device/py/include/
sed -n 's/^project(dbsparse VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt > .device/py/version
mkdir -p /tmp/dbs-wheels
[ -n "$(ls /tmp/dbs-wheels/hypothesis-*.whl 2>/dev/null)" ] ||
  pip download -q nanobind pytest hypothesis --python-version 3.12 --only-binary=:all: -d /tmp/dbs-wheels >/dev/null
for w in /tmp/dbs-wheels/*.whl; do python3 -m zipfile -e "$w" .device/py/site/; done
du -sh .device
# The tree plus .device passes the 64 MiB a device call carries once the matrices are in: pack
# .device (about 20 MB), carry [".devpack"] and start the call with
# `tar xzf .devpack/device.tgz && ...`.
mkdir -p .devpack && tar czf .devpack/device.tgz .device && du -sh .devpack/device.tgz
# The call carries at most 64 MiB, the tree included: say so before a call fails for it.
PACK=$(stat -c %s .devpack/device.tgz)
if [ "$PACK" -gt $((60 << 20)) ]; then
  echo "warning: .devpack/device.tgz is $((PACK >> 20)) MiB; with the tree it may pass the 64 MiB a call carries (PREPARE_PUBLIC=0 leaves the public matrices out, PREPARE_CPU_TESTS=0 the CPU test binaries)" >&2
fi
