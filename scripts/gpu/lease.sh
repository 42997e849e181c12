#!/usr/bin/env bash
# The qualification kit inside a short, timed lease of a GPU machine (docs/gpu-qualification.md):
# runs scripts/gpu/qualify.sh with --skip-tests first (the steps only a GPU can do), then
# the torch and cli test tiers against that machine's libtorch with what time is left, and
# packs what was measured (report, step times, logs, calibration tables, run JSON, leak
# reports; not the build) into one archive, since a lease returns only a few files.
#   scripts/gpu/lease.sh ARCHIVE [SECONDS]     (SECONDS: the whole budget, default 500)
# Exit: qualify.sh's (0 qualified, 1 a step failed), or 124 when it ran out of time.
set -uo pipefail
cd "$(dirname "$0")/../.."
archive=${1:?usage: scripts/gpu/lease.sh ARCHIVE [SECONDS]}
budget=${2:-500}
work=$(mktemp -d)
started=$(date +%s)
# A pip-installed CMake 4 refuses package configs that ask for policies older than 3.5.
export CMAKE_POLICY_VERSION_MINIMUM=3.5

deps=()
[ -f build-gpu/deps/mold-gpu-deps.tar ] && deps=(--deps build-gpu/deps/mold-gpu-deps.tar)
timeout --kill-after=5 $((budget - 60)) scripts/gpu/qualify.sh "$work/q" --skip-tests "${deps[@]}"
rc=$?
echo "lease: qualify exit $rc after $(($(date +%s) - started)) s" >&2

left=$((budget - 20 - ($(date +%s) - started)))
if [ -x "$work/q/build/bin/mold" ] && [ "$left" -gt 20 ]; then
  echo "lease: torch and cli tiers, $left s left" >&2
  # The prefix's libraries' own dependencies (libicuuc's libicudata) are not on the rpath.
  export LD_LIBRARY_PATH=$work/q/prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  (cd "$work/q/build" && timeout --kill-after=5 "$left" ctest -j "$(nproc)" --timeout 120 \
    -L '^(torch|cli)$' -L random_order --output-on-failure) >"$work/q/logs/tests.log" 2>&1
  echo "lease: tests exit $? ($(grep -E 'tests passed|tests failed' "$work/q/logs/tests.log" || echo 'no summary'))" >&2
fi

tar -C "$work/q" -czf "$archive" --exclude=./build --exclude=./prefix --exclude=./ccache \
  --exclude=./debs . && echo "lease: $archive ($(du -h "$archive" | cut -f1))" >&2
exit $rc
