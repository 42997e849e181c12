#!/usr/bin/env bash
# Installs the Debian packages mold needs, then configures and builds it with a CMake
# preset: default (build/), ci (build-ci/, warnings are errors), asan (build-asan/),
# cpu-only, debug; see CMakePresets.json.
#   ./scripts/build.sh [PRESET [TARGET...]]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
[ $# -gt 0 ] && shift
./scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build --preset "$preset" --target "$@"
else
  cmake --build --preset "$preset"
fi
