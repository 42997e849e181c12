#!/usr/bin/env bash
# Installs every Debian 12 package that building and testing mold needs.
# Idempotent and quiet when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev
  # A fast BLAS: libtorch's float32 matrix products call libblas.so.3, which on a fresh
  # Debian 12 is the reference BLAS (netlib), about 50x slower (docs/benchmarks.md).
  # Installing OpenBLAS makes it libblas.so.3 (update-alternatives, priority 100).
  libopenblas0-pthread
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libfmt-dev libtomlplusplus-dev nlohmann-json3-dev catch2
  libpcre2-dev libicu-dev xz-utils
  libpng-dev
  prometheus-cpp-dev  # mold serve's /metrics (the core library; Beast serves it)
  clang libclang-rt-14-dev
  chromium  # tests: the profiler's HTML report opened in a headless browser
  nginx     # tests: two mold serve behind a real load balancer
  wrk       # bench: /health and /metrics requests per second
)
# tests: OpenAI's own Node client (npm "openai") against mold serve. Debian's Node.js
# and npm, unless a Node.js with npm is already installed (NodeSource's conflicts with
# Debian's npm package).
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
