#!/usr/bin/env bash
# Builds the libFuzzer targets (preset fuzz: clang, -DMOLD_FUZZ=ON, into build-fuzz/) and
# runs each for SECONDS (default 30) from the seeds in tests/data/fuzz/<target>/. Exits
# non-zero when a fuzzer finds a crash, a leak, a timeout or a sanitizer report; the
# input is kept in build-fuzz/findings/.
#   ./scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
targets=(safetensors_header config oom_text)
./scripts/build.sh fuzz "${targets[@]/#/fuzz_}"
mkdir -p build-fuzz/findings
status=0
for target in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$target
  mkdir -p "$corpus"
  cp -n tests/data/fuzz/"$target"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds} s"
  if ! ./build-fuzz/bin/fuzz_"$target" "$corpus" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -artifact_prefix=build-fuzz/findings/"$target"- \
      -print_final_stats=1 >build-fuzz/"$target".log 2>&1; then
    echo "fuzz: $target found a problem (build-fuzz/$target.log, build-fuzz/findings/):" >&2
    tail -40 build-fuzz/"$target".log >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/"$target".log |
      sed "s/^/  $target: /"
  fi
done
exit $status
