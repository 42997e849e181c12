#!/usr/bin/env bash
# Builds the libFuzzer targets (in the asan preset's tree, build-asan/: clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, libFuzzer's coverage in all of mold) and runs each for
# SECONDS (default 30) from the seeds in tests/data/fuzz/<target>/, all at once. Exits
# non-zero when a fuzzer finds a crash, a leak, a timeout or a sanitizer report; the input is kept in
# build-asan/fuzz/findings/.
#   ./scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
seconds=${1:-30}
targets=(safetensors_header config oom_text weight_layout)
./scripts/build.sh asan "${targets[@]/#/fuzz_}"
work=build-asan/fuzz
mkdir -p "$work/findings"
run_fuzzer() {  # TARGET CORPUS
  ./build-asan/bin/fuzz_"$1" "$2" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/findings/$1-" -print_final_stats=1 >"$work/$1.log" 2>&1
}
# fuzz_one TARGET: one fuzzer's run and its summary; its outcome in $work/TARGET.status.
fuzz_one() {
  local target=$1 corpus=$work/corpus/$1
  mkdir -p "$corpus"
  cp -n tests/data/fuzz/"$target"/* "$corpus"/ 2>/dev/null || true
  echo "fuzz: $target for ${seconds} s"
  if ! stage "fuzz $target" run_fuzzer "$target" "$corpus"; then
    echo "fuzz: $target found a problem ($work/$target.log, $work/findings/):" >&2
    tail -40 "$work/$target.log" >&2
    echo 1 >"$work/$target.status"
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$target.log" |
      sed "s/^/  $target: /"
    echo 0 >"$work/$target.status"
  fi
}
# Each fuzzer is one process; all run at once, each for SECONDS of wall time (with more
# fuzzers than cores, each makes fewer executions in that time).
for target in "${targets[@]}"; do
  rm -f "$work/$target.status"
  fuzz_one "$target" &
done
wait
status=0
for target in "${targets[@]}"; do
  [ "$(cat "$work/$target.status" 2>/dev/null)" = 0 ] || status=1
done
exit $status
