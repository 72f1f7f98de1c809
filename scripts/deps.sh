#!/usr/bin/env bash
# Installs the Debian packages dbsparse builds with, only those missing. Sourced by the Quick start
# scripts; needs root or sudo when something is missing.
set -euo pipefail
pkgs=(build-essential cmake ninja-build libfmt-dev doctest-dev libcli11-dev nlohmann-json3-dev
      libsqlite3-dev zlib1g-dev python3-dev python3-venv clang clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing missing packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if [ ! -f /usr/local/cuda/include/cuda.h ]; then
  echo "error: the CUDA toolkit (13.0) is expected in /usr/local/cuda (headers, NVRTC, cuSPARSE)" >&2
  exit 1
fi
