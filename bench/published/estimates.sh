#!/usr/bin/env bash
# Estimates against measured peaks for every variant of Z-Image-Turbo people download,
# at the published architecture (random weights), per phase and compute-thread count:
# one row per (variant, threads, phase) with the estimate, the measured working peak
# (the phase's peak above what was allocated when it started), their ratio and whether
# it lies in [1.00, 1.10]. Not CI: a 19 GiB directory plus 3.5-6.5 GiB per variant file,
# 13 GiB of memory, a minute or two per run. Exit 1 when a row is out of range.
#
#   bench/published/estimates.sh [--dir DIR] [--files DIR] [--variants "..."]
#                                [--threads "1 2 4"] [--size PX] [--prompt TEXT]
#                                [--build DIR]
#   --dir       the bf16 model directory (written by write_random_model when it has no
#               model_index.json; default $TMPDIR/mold-published/z-image)
#   --files     where the single-file variants are (written when missing; default
#               $TMPDIR/mold-published/z-image-files)
#   --variants  of: bf16 (the directory alone); fp8, q8_0, q4_0, q4_k (the transformer
#               as that file: ComfyUI's scaled fp8, city96's lumina2 GGUFs); te-q8_0,
#               te-q4_k (the text encoder as llama.cpp's qwen3 GGUF). Default: all
#   --threads   libtorch's compute threads (OMP_NUM_THREADS) per run; default 1, the
#               machine's cores, and twice them
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=""
files=""
variants="bf16 fp8 q8_0 q4_0 q4_k te-q8_0 te-q4_k"
cores=$(nproc)
threads="1 $cores $((2 * cores))"
size=256
prompt="a red fox standing in fresh snow at the edge of a pine forest at dawn, soft golden light, mist between the trees, detailed fur, shallow depth of field, photographed with a telephoto lens"
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "estimates.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
for tool in "$build/bin/mold" "$build/bin/write_random_model"; do
  if [ ! -x "$tool" ]; then
    echo "estimates.sh: $tool is missing: build it first (cmake --build $build --target mold write_random_model)" >&2
    exit 1
  fi
done
dir=${dir:-${TMPDIR:-/tmp}/mold-published/z-image}
files=${files:-${TMPDIR:-/tmp}/mold-published/z-image-files}
avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
if [ "$avail_kib" -lt "$((13 * 1024 * 1024))" ]; then
  echo "estimates.sh: $((avail_kib / 1048576)) GiB of memory available, the transformer needs about 13 GiB: not run" >&2
  exit 0
fi
if [ ! -f "$dir/model_index.json" ]; then
  echo "== writing $dir"
  "$build/bin/write_random_model" zimage "$dir" || {
    echo "estimates.sh: could not write the model directory (see above): not run" >&2
    exit 0
  }
fi

# variant_args VARIANT: the flags that give mold run the variant's file (written first
# when missing).
variant_args() {
  local variant=$1 component format file
  case "$variant" in
    bf16) return 0 ;;
    fp8) component=transformer; format=fp8; file=$files/z_image_turbo_fp8_scaled.safetensors ;;
    q8_0|q4_0|q4_k)
      component=transformer; format=$variant
      file=$files/z_image_turbo-${variant^^}.gguf ;;
    te-q8_0|te-q4_k)
      component=text-encoder; format=${variant#te-}
      file=$files/Qwen3-4B-${format^^}.gguf ;;
    *) echo "estimates.sh: variant '$variant': see the header of $0" >&2; exit 2 ;;
  esac
  if [ ! -f "$file" ]; then
    "$build/bin/write_random_model" "zimage-$component" "$file.part" --format "$format" >&2
    mv "$file.part" "$file"
  fi
  echo "--$component" "$file"
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The shipped tables' estimates, not a history that would raise them: a history
# outside $out would carry earlier runs' peaks, and one inside it each row's into
# the next row's estimate (the same VAE shape for every variant).
printf '[estimates]\nlearn = false\n' >"$out/config.toml"
export MOLD_CONFIG="$out/config.toml"
: >"$out/rows"
printf '%-8s %7s  %-12s %12s %12s %9s  %s\n' variant threads phase estimate measured est/meas verdict
for variant in $variants; do
  read -r -a extra <<<"$(variant_args "$variant")"
  for t in $threads; do
    if ! OMP_NUM_THREADS=$t "$build/bin/mold" run z-image-turbo "$prompt" --model-dir "$dir" \
        --width "$size" --height "$size" --steps 1 --seed 0 --dtype bfloat16 --json \
        --output "$out" "${extra[@]}" >"$out/run.json" 2>"$out/progress"; then
      echo "$variant at $t threads: mold run failed:"
      tail -5 "$out/progress"
      echo "$variant $t run - - 0 failed" >>"$out/rows"
      continue
    fi
    python3 - "$out/run.json" "$variant" "$t" >>"$out/rows" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
for p in run["phases"]:
    if p.get("status") != "done":
        continue
    working = max(0, p["after"]["peak_allocated"] - p["before"]["allocated"])
    est = p.get("estimate_bytes", 0)
    ratio = est / working if working else 0
    verdict = "ok" if 1.0 <= ratio <= 1.10 else ("UNDER" if ratio < 1.0 else "OVER")
    print(sys.argv[2], sys.argv[3], p["phase"], est, working, f"{ratio:.3f}", verdict)
PY
    tail -n +1 "$out/rows" | awk -v v="$variant" -v t="$t" '$1 == v && $2 == t {
      mib = 1048576
      printf "%-8s %7s  %-12s %9.2f MiB %9.2f MiB %9s  %s\n", $1, $2, $3, $4 / mib, $5 / mib, $6, $7 }'
  done
done
bad=$(awk '$7 != "ok"' "$out/rows" | wc -l)
echo "$(wc -l <"$out/rows") rows, $bad out of [1.00, 1.10]"
[ "$bad" -eq 0 ]
