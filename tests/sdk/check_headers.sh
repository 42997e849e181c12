#!/usr/bin/env bash
# Every installed public header compiles alone (checked with -fsyntax-only: the front
# end is what can fail). Headers of mold::core (those under core/include) are compiled
# with the SDK include dir only and must reach no libtorch header (checked in the
# compiler's dependency list, since a system may keep libtorch's headers in
# /usr/include); headers of mold::torch (torch/include) get libtorch's include dirs, and
# one whose code names at::, c10:: or torch:: must include a libtorch header itself
# (checked in a dependency list that follows mold's headers and names, without opening,
# every other). They are compiled with <ATen/ATen.h> precompiled once and included
# first, so that each does not parse it again; what they need of mold and the standard
# library they must include. Every installed header comes from one of the two folders.
# The headers are checked in parallel, one job per core.
#   check_headers.sh BUILD_DIR WORK_DIR CXX CORE_INCLUDE TORCH_INCLUDE TORCH_INCLUDE_DIR...
set -euo pipefail
build_dir=$1 work=$2 cxx=$3 core_source=$4 torch_source=$5
shift 5
torch_flags=()
for dir in "$@"; do torch_flags+=("-isystem" "$dir"); done

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
include="$work/prefix/include"

# check HEADER torch|core: writes "ok" or what failed to TU.result.
check() {
  local header=$1 kind=$2 name tu deps
  name=${header#"$include/"}
  tu="$work/$(echo "$name" | tr '/.' '__').cpp"
  exec >"$tu.result"
  printf '#include <%s>\n#include <%s>\n' "$name" "$name" >"$tu"  # twice: include guards
  if [ "$kind" = core ]; then
    if ! deps=$("$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -M "$tu" 2>"$tu.err"); then
      echo "FAIL $name: does not compile alone with the SDK include dir:"; cat "$tu.err"; return
    fi
    if grep -Eq '/(ATen|c10|torch)/' <<<"$deps"; then
      echo "FAIL $name: a torch-free header reaches libtorch:"
      grep -Eo '[^ ]*/(ATen|c10|torch)/[^ ]*' <<<"$deps" | head -3; return
    fi
    "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -fsyntax-only "$tu" \
      2>"$tu.err" || { echo "FAIL $name:"; cat "$tu.err"; return; }
  else
    # Which headers it includes, mold's followed, every other one named but not opened:
    # whether it includes a libtorch header itself, without preprocessing libtorch.
    if ! deps=$("$cxx" -std=c++17 -nostdinc -nostdinc++ -I"$include" -M -MG "$tu" 2>"$tu.err"); then
      echo "FAIL $name: its includes of mold's headers do not resolve:"; cat "$tu.err"; return
    fi
    if grep -v '^[[:space:]]*//' "$header" | grep -Eq '(^|[^[:alnum:]_])(at|c10|torch)::' &&
      ! grep -Eq '(^|[[:space:]])(ATen|c10|torch)/' <<<"$deps"; then
      echo "FAIL $name: its code names at::, c10:: or torch:: but it includes no libtorch" \
        "header; include the libtorch header it uses"; return
    fi
    "$cxx" -std=c++17 -I"$include" "${torch_flags[@]}" -include "$work/pch/aten.hpp" \
      -fsyntax-only "$tu" 2>"$tu.err" ||
      { echo "FAIL $name: does not compile alone with libtorch's include dirs:"; cat "$tu.err"; return; }
  fi
  echo ok
}

# <ATen/ATen.h>, precompiled under the flags the torch headers are compiled with.
mkdir -p "$work/pch"
echo '#include <ATen/ATen.h>' >"$work/pch/aten.hpp"
"$cxx" -std=c++17 -I"$include" "${torch_flags[@]}" -x c++-header "$work/pch/aten.hpp" \
  -o "$work/pch/aten.hpp.gch" 2>"$work/pch/aten.err" ||
  { echo "FAIL <ATen/ATen.h> does not compile with libtorch's include dirs (${torch_flags[*]}):"
    cat "$work/pch/aten.err"; exit 1; }

jobs_max=$(nproc) fail=0
while IFS= read -r h; do
  name=${h#"$include/"}
  if [ -f "$core_source/$name" ] || [ "$name" = mold/base/build_config.hpp ]; then kind=core
  elif [ -f "$torch_source/$name" ]; then kind=torch
  else echo "FAIL $name is installed but is in neither core/include nor torch/include"; fail=1; continue
  fi
  check "$h" "$kind" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done < <(find "$include/mold" -name '*.hpp' | sort)
wait
count=0
for result in "$work"/*.result; do
  if [ "$(cat "$result")" = ok ]; then count=$((count + 1)); else cat "$result"; fail=1; fi
done
# Nothing installed outside the areas.
stray=$(find "$include/mold" -maxdepth 1 -type f | head -3)
[ -z "$stray" ] || { echo "FAIL headers directly under include/mold: $stray"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "headers: $count installed headers compile alone"
