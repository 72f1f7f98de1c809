# Sourced by the tools/device/*_run.sh and check.sh scripts (from the repository root, after
# `tar xzf .devpack/device.tgz`): where the unpacked .device/ is, where logs go ($OUT comes back
# from the device), and the environment that points dbsparse at the carried matrices (shared and
# public), kernel cache and a throw-away tuning DB.
D=$PWD/.device
OUT=${OUT:-/tmp/dbsparse-out}; mkdir -p "$OUT"
export DBSPARSE_MATRICES=$D/matrices DBSPARSE_CACHE_DIR=$D/cache DBSPARSE_DB=/tmp/dbsparse-tuning.db
# The public matrices (docs/MATRICES.md), when prepare.sh carried them: run a bench on them with
# DBSPARSE_MATRICES=$DBSPARSE_PUBLIC_MATRICES ... --suite none, or name their files.
export DBSPARSE_PUBLIC_MATRICES=$D/public-matrices
# The AOT kernels prepare.sh made with PREPARE_AOT=1, when present (an installed package's folder).
if [ -d "$D/aot" ]; then export DBSPARSE_AOT_DIR=$D/aot; fi
