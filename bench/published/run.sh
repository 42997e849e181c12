#!/usr/bin/env bash
# The published-scale kit: a model directory at the published architecture (random
# weights, written by write_random_model from the listings in tests/data), then
# `mold run` on it at each size, and per phase: the estimate, the measured working peak,
# their ratio, the phase's seconds, the component's load time and GB/s; and the
# process's peak RSS. Not CI: 20-28 GB of disk and 13-17 GiB of memory, minutes per run.
# What the machine cannot do (disk, memory) is printed and skipped, not failed half-way.
#
#   bench/published/run.sh [--model z-image|qwen-image-edit] [--dir DIR]
#                          [--sizes "256 512"] [--steps N] [--limit BYTES]
#                          [--build DIR] [--seed N]
#   --model   z-image (default): Z-Image-Turbo, bf16 (19.1 GiB);
#             qwen-image-edit: Qwen-Image-Edit-2511, its q4 variant (text encoder and
#             VAE bf16, the 20B transformer as a Q4_0 GGUF; 26.9 GiB), editing one
#             source image (a tiny Z-Image's, made first)
#   --dir     the model directory (written when it has no model_index.json; default
#             $TMPDIR/mold-published/<model>)
#   --limit   also run each size under --cpu-memory-limit BYTES (e.g. "14 GiB"): the
#             cache must park the text encoder before the transformer loads
set -euo pipefail
cd "$(dirname "$0")/../.."
model=z-image
dir=""
sizes="256 512"
steps=1
limit=""
build=build
seed=0
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "run.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
for tool in "$build/bin/mold" "$build/bin/write_random_model"; do
  if [ ! -x "$tool" ]; then
    echo "run.sh: $tool is missing: build it first (cmake --build $build --target mold write_random_model)" >&2
    exit 1
  fi
done

# The largest component and room to run it: Z-Image's transformer (11.46 GiB in bf16),
# Qwen-Image-Edit's text encoder (15.45 GiB in bf16).
case "$model" in
  z-image) writer=zimage; run_model=z-image-turbo; need_gib=13; extra=() ;;
  qwen-image-edit)
    writer=qwen-image-edit; run_model=qwen-image-edit-2511:q4; need_gib=17
    extra=() ;;
  *) echo "run.sh: --model '$model': give z-image or qwen-image-edit" >&2; exit 2 ;;
esac
dir=${dir:-${TMPDIR:-/tmp}/mold-published/$model}
avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ "$avail_kib" -lt "$((need_gib * 1024 * 1024))" ]; then
  echo "run.sh: $((avail_kib / 1048576)) GiB of memory available, the largest component needs about $need_gib GiB: not run" >&2
  exit 0
fi

if [ ! -f "$dir/model_index.json" ]; then
  echo "== writing $dir"
  start=$(date +%s)
  "$build/bin/write_random_model" "$writer" "$dir" --seed "$seed" || {
    echo "run.sh: could not write the model directory (see above): not run" >&2
    exit 0
  }
  echo "written in $(($(date +%s) - start)) s"
fi
echo "== BLAS and matrix-product speed"
"$build/bin/molddiag" doctor --gemm-rows 288 --gemm-in 3840 --gemm-out 3840 || true

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The shipped tables' estimates, not a history that would raise them: a history
# outside $out would carry earlier runs' peaks, and one inside it each row's into
# the next size's estimate.
printf '[estimates]\nlearn = false\n' >"$out/config.toml"
export MOLD_CONFIG="$out/config.toml"
if [ "$model" = qwen-image-edit ]; then
  # The source image: any picture will do (the pipeline scales it to its areas).
  "$build/bin/mold" run z-image-turbo "a red fox in the snow" --tiny --width 256 \
    --height 256 --seed 0 --output "$out/source" >/dev/null 2>&1
  extra=(--image "$out/source/z-image-turbo-0.png")
fi
# run_one SIZE [LIMIT]: one image, its JSON and peak RSS, then the table.
run_one() {
  local size=$1 lim=${2:-} args=()
  [ -n "$lim" ] && args=(--cpu-memory-limit "$lim")
  echo
  echo "== ${size}x${size} px, $steps step(s)${lim:+, --cpu-memory-limit $lim}"
  if ! /usr/bin/time -f '%M %e' -o "$out/time" "$build/bin/mold" run "$run_model" \
      "a red fox in the snow" --model-dir "$dir" --width "$size" --height "$size" \
      --steps "$steps" --seed 0 --dtype bfloat16 --json --output "$out" \
      "${extra[@]}" "${args[@]}" >"$out/run.json" 2>"$out/progress"; then
    echo "mold run failed:"
    tail -5 "$out/progress"
    return 0
  fi
  python3 - "$out/run.json" "$out/time" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
rss_kib, wall = open(sys.argv[2]).read().split()
def gib(b): return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.2f} MiB"
print(f"{'phase':<12} {'estimate':>12} {'measured':>12} {'est/meas':>9} {'seconds':>9} {'load s':>8} {'load GB/s':>10}")
for p in run["phases"]:
    if p.get("status") != "done":
        continue
    working = max(0, p["after"]["peak_allocated"] - p["before"]["allocated"])
    est = p.get("estimate_bytes", p.get("estimate", {}).get("bytes", 0))
    ratio = f"{est / working:.3f}" if working else "-"
    load = p.get("load_seconds", 0)
    size = next((r["bytes"] for r in p["residency"] if r["component"] == p["component"]), 0)
    rate = f"{size / load / 1e9:.2f}" if load > 0 else "-"
    print(f"{p['phase']:<12} {gib(est):>12} {gib(working):>12} {ratio:>9} {p['seconds']:9.1f} {load:8.1f} {rate:>10}")
print(f"process peak RSS {int(rss_kib) / 2**20:.2f} GiB, wall {float(wall):.0f} s")
PY
}
for size in $sizes; do
  run_one "$size"
  if [ -n "$limit" ]; then run_one "$size" "$limit"; fi
done
