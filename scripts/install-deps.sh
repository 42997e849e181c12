#!/usr/bin/env bash
# Installs the Debian 12 packages mold needs: with MOLD_DEPS=main (scripts/run-default.sh)
# only what building and running the main job takes; otherwise (the default) everything
# building and testing mold takes. Idempotent and quiet when everything is already
# installed; otherwise it says what it installs and each package as it is set up.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config xz-utils
  libtorch-dev
  # A fast BLAS: libtorch's float32 matrix products call libblas.so.3, which on a fresh
  # Debian 12 is the reference BLAS (netlib), about 50x slower (docs/benchmarks.md).
  # Installing OpenBLAS makes it libblas.so.3 (update-alternatives, priority 100).
  libopenblas0-pthread
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libfmt-dev libtomlplusplus-dev nlohmann-json3-dev
  catch2  # header-only; configuring the tree (which declares the tests) needs it
  libpcre2-dev libicu-dev
  libpng-dev
  prometheus-cpp-dev  # mold serve's /metrics (the core library; Beast serves it)
)
if [ "${MOLD_DEPS:-all}" != main ]; then
  packages+=(
    clang libclang-rt-14-dev  # the asan preset and the fuzzers
    chromium  # tests: the profiler's HTML report opened in a headless browser
    nginx     # tests: two mold serve behind a real load balancer
    wrk       # bench: /health and /metrics requests per second
  )
  # tests: OpenAI's own Node client (npm "openai") against mold serve. Debian's Node.js
  # and npm, unless a Node.js with npm is already installed (NodeSource's conflicts with
  # Debian's npm package).
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

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
echo "install-deps: installing ${missing[*]} (and what they depend on)" >&2
$sudo apt-get update -qq
# apt's own lines, one per package as it is downloaded and set up, are the progress.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
  -o Dpkg::Use-Pty=0 "${missing[@]}" |
  awk '/^Get:/ { got++; if (got % 20 == 1) printf "install-deps: downloading (%d packages so far)\n", got }
       /^Setting up / { set++; if (set % 20 == 1) printf "install-deps: setting up %s (%d so far)\n", $3, set }
       END { printf "install-deps: %d packages downloaded, %d set up\n", got, set }' >&2
