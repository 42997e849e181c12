#!/usr/bin/env bash
# The test command: sets up a fresh Debian 12 machine, builds, and runs every test once:
# each tier's test cases in random order, split into a few processes (the CTest entries
# labelled random_order), and the sdk tier.
#   ./scripts/test.sh [--preset PRESET] [--long] [CTEST ARGS...]
# With CTEST ARGS, those select instead: e.g. `-L cli -L random_order` (the cli tier
# once), `-R 'mold serve: a full queue'` (one test case, its own CTest entry).
# --long: the mutation tests run 50000 cases each instead of a few thousand.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
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
[ $# -gt 0 ] || set -- -L 'random_order|sdk'
stage "test $preset" ctest --preset "$preset" -j "$(nproc)" "$@"
