#!/usr/bin/env bash
# VAE memory and time, side by side in one run per line: for each family at 256x256 and
# 512x512 (the published architectures, seeded weights, float32, cpu backend), the decode
# whole, with bounded convolutions and in tiles (molddiag tiling prints peak(whole)/peak(x),
# time(x)/time(whole) and the relative L2 against the whole decode), then oneDNN's
# convolutions against libtorch's im2col path at 256x256.
#
#   bench/vae_tiling_bench.sh [sizes...]     (default: 256 512)
set -euo pipefail
cd "$(dirname "$0")/.."
molddiag=${MOLDDIAG:-./build/bin/molddiag}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 512)
date -u
for family in qwen_image zimage; do
  for size in "${sizes[@]}"; do
    "$molddiag" tiling --family "$family" --size "$size"
    echo
  done
  "$molddiag" tiling --family "$family" --size 256 --mkldnn off
  echo
done
