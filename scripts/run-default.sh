#!/usr/bin/env bash
# The main job on the built-in default (cpu backend, tiny model): builds mold, prints the
# plan of a tiny Z-Image generation (each phase's estimate, what is resident, what is
# free), then makes the image: text encoder, denoiser steps and VAE decode through the
# model cache, with seeded weights (labelled so in the progress and the PNG). The image
# lands in out/ (or the directory given as the first argument).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out}"
./scripts/build.sh >/dev/null
./build/bin/mold run z-image-turbo "a red fox in the snow" --tiny --plan
echo
./build/bin/mold run z-image-turbo "a red fox in the snow" --tiny --output "$out"
