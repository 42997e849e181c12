#!/usr/bin/env bash
# The main job on the built-in default (cpu backend, tiny models): builds mold, lists its
# plugins, estimates a Qwen-Image VAE decode, and decodes a seeded latent with the tiny
# Qwen-Image VAE whole, with bounded convolutions and in tiles, measuring each.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
./build/bin/molddiag plugins
echo
./build/bin/molddiag estimate --family qwen_image --op vae_decode --backend cpu \
  --width 512 --height 512 --dtype float32
echo
./build/bin/molddiag tiling --family qwen_image --arch tiny --size 256
