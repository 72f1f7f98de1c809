#!/usr/bin/env bash
# Quick start, command 1: build, then run the main job, dbtune on the default (quick) suite.
# Without a GPU dbtune says so and does what needs none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/dbtune --quick "$@"
