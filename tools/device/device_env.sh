# Sourced by the tools/device/*_run.sh and check.sh scripts (from the repository root, after
# `tar xzf .devpack/device.tgz`): where the unpacked .device/ is, where logs go ($OUT comes back
# from the device), and the environment that points dbsparse at the carried matrices, kernel cache
# and a throw-away tuning DB.
D=$PWD/.device
OUT=${OUT:-/tmp/dbsparse-out}; mkdir -p "$OUT"
export DBSPARSE_MATRICES=$D/matrices DBSPARSE_CACHE_DIR=$D/cache DBSPARSE_DB=/tmp/dbsparse-tuning.db
