#!/usr/bin/env bash
# The test command: sets up a fresh Debian 12 machine, builds, and runs every test.
#   ./scripts/test.sh [--preset PRESET] [--long] [CTEST ARGS...]
# e.g. ./scripts/test.sh -L unit; ./scripts/test.sh --preset asan -L 'unit|cli'
# --long: the mutation tests run 50000 cases each instead of a few thousand.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
if [ "${1:-}" = "--preset" ]; then
  preset=${2:?--preset needs a name}
  shift 2
fi
if [ "${1:-}" = "--long" ]; then
  export MOLD_MUTATION_CASES=50000
  shift
fi
./scripts/build.sh "$preset"
ctest --preset "$preset" "$@"
