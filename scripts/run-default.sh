#!/usr/bin/env bash
# The main job on the built-in default (cpu backend, tiny model): installs what building
# and running it takes (MOLD_DEPS=main), builds only what it runs (the mold_main_job
# target: mold, its libtorch twin, the zimage plugin; the test command builds the rest in
# the same tree), prints the plan of a tiny Z-Image generation (each phase's estimate,
# what is resident, what is free), then makes the image: text encoder, denoiser steps and
# VAE decode through the model cache, with seeded weights (labelled so in the progress and
# the PNG). The image lands in out/ (or the directory given as the first argument). The
# build's progress and each stage's time go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-out}"
MOLD_DEPS=main ./scripts/build.sh default mold_main_job >&2
./build/bin/mold run z-image-turbo "a red fox in the snow" --tiny --plan
echo
./build/bin/mold run z-image-turbo "a red fox in the snow" --tiny --output "$out"
