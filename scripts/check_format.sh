#!/usr/bin/env bash
# Fails when a tracked C++/CUDA file is not formatted as the root .clang-format says (clang-format
# --dry-run --Werror), naming the file and line. The generated golden sources (tests/golden) and the
# fuzz corpus are data, not code, and are left out. Fix with: clang-format -i FILE.
# The tree is formatted with Debian's clang-format 14 (scripts/deps.sh installs it); another version
# may break lines differently. CLANG_FORMAT=... picks the binary. Exit 77 (ctest: skipped) without one.
set -euo pipefail
cd "$(dirname "$0")/.."
cf="${CLANG_FORMAT:-}"
if [ -z "$cf" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null; then cf="$c"; break; fi
  done
fi
if [ -z "$cf" ] || ! command -v "$cf" >/dev/null; then
  echo "check_format: no clang-format found (Debian package clang-format): skipped" >&2
  exit 77
fi
version="$("$cf" --version)"
case "$version" in
  *" 14."*) ;;
  *) echo "check_format: note: $version is not clang-format 14, which formatted the tree" >&2 ;;
esac
mapfile -d '' files < <(git ls-files -z -- '*.cpp' '*.cc' '*.hpp' '*.h' '*.cuh' '*.cu' ':!:tests/golden/*' ':!:tests/fuzz/corpus/*')
if "$cf" --dry-run --Werror --style=file "${files[@]}"; then
  echo "check_format: ${#files[@]} files formatted as .clang-format says"
else
  echo "check_format: the files above differ from .clang-format; run $cf -i on them" >&2
  exit 1
fi
