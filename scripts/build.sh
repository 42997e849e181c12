#!/usr/bin/env bash
# Installs the Debian packages mold needs, then configures and builds it (preset default,
# Ninja, ccache) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  cmake --preset default >/dev/null
fi
cmake --build --preset default
