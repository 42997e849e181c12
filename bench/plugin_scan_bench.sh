#!/usr/bin/env bash
# The plugin scanner's cost: `molddiag plugins` with the bundled plugins, run side by side
# in three ways, interleaved, N times each (default 20): without the scanner (--no-scan,
# the cost before the scanner existed), warm (every verdict cached) and cold (the cache
# removed before each run, so every plugin is loaded in a child process first). Prints
# the median wall time of each and the ratios warm/no-scan and cold/no-scan.
#   bench/plugin_scan_bench.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build}
n=${2:-20}
molddiag="$build/bin/molddiag"
[ -x "$molddiag" ] || { echo "no $molddiag: build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work" XDG_CACHE_HOME="$work/cache" XDG_CONFIG_HOME="$work/config"
unset MOLD_CONFIG MOLD_PLUGIN_PATH

seconds() {  # run "$@" once, print its wall time in seconds
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null
  end=$(date +%s%N)
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.6f\n", (b - a) / 1e9}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$molddiag" plugins >/dev/null  # warm the page cache and the scan cache
: >"$work/none" ; : >"$work/warm" ; : >"$work/cold"
for _ in $(seq "$n"); do
  seconds "$molddiag" plugins --no-scan >>"$work/none"
  seconds "$molddiag" plugins >>"$work/warm"
  rm -f "$XDG_CACHE_HOME/mold/plugins.json"
  seconds "$molddiag" plugins >>"$work/cold"
done
none=$(median <"$work/none") warm=$(median <"$work/warm") cold=$(median <"$work/cold")
plugins=$("$molddiag" plugins --json | grep -c '"build_id"')
echo "molddiag plugins, $((plugins - 2)) plugin libraries, median of $n runs each:"
printf '  %-28s %8.3f s\n' "no scanner (--no-scan)" "$none" "warm (verdicts cached)" "$warm" \
  "cold (every plugin scanned)" "$cold"
awk -v w="$warm" -v c="$cold" -v n="$none" 'BEGIN {
  printf "  ratio warm / no-scan: %.2f (target <= 1.2)\n", w / n
  printf "  ratio cold / no-scan: %.2f (target <= 3)\n", c / n }'
