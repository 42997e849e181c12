#!/usr/bin/env bash
# Installs the Debian packages mold needs, then configures and builds it with a CMake
# preset: default (build/), ci (build-ci/, warnings are errors), asan (build-asan/: clang,
# AddressSanitizer + UndefinedBehaviorSanitizer, the fuzz targets), cpu-only, debug; see
# CMakePresets.json. Prints each stage's wall time (scripts/stage.sh).
#   ./scripts/build.sh [PRESET [TARGET...]]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
preset=${1:-default}
[ $# -gt 0 ] && shift
stage "install-deps" ./scripts/install-deps.sh
stage "configure $preset" cmake --preset "$preset" >/dev/null
if [ $# -gt 0 ]; then
  stage "build $preset ($*)" cmake --build --preset "$preset" --target "$@"
else
  stage "build $preset" cmake --build --preset "$preset"
fi
