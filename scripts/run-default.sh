#!/usr/bin/env bash
# The main job on the built-in default: builds mold, lists its plugins, and estimates the
# working memory of a Qwen-Image VAE decode at 512x512 on the cpu backend.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
./build/bin/molddiag plugins
echo
./build/bin/molddiag estimate --family qwen_image --op vae_decode --backend cpu \
  --width 512 --height 512 --dtype float32
