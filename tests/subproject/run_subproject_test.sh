#!/usr/bin/env bash
# Configures tests/subproject (a parent that add_subdirectory()s mold) and builds and
# runs its consumer of mold::core.
#   run_subproject_test.sh MOLD_SOURCE_DIR WORK_DIR
set -euo pipefail
source_dir=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
# Through ccache when it is installed (paths relative to the sources: a clone hits).
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$source_dir CCACHE_NOHASHDIR=1
fi
# No build type: no optimisation, no debug information (what is checked is that the
# parent configures and links against mold::core, not how fast mold runs).
cmake -S "$source_dir/tests/subproject" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE= \
  "${launcher[@]}" -DMOLD_SOURCE_DIR="$source_dir" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
cmake --build "$work" --target consumer >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; exit 1; }
"$work/consumer"
