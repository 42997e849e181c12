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
# The headers are checked in parallel, one job per core. A header that passed is not
# compiled again while nothing it reads changed: results are kept (as ccache keeps
# objects) in ${XDG_CACHE_HOME:-~/.cache}/mold/headers-alone under a key of all a check
# reads: this script, the compiler's version and flags, the installed packages' versions
# (where libtorch's and the standard library's headers come from), the header's name and
# the content of every header its dependency list names. MOLD_HEADERS_CACHE=off checks
# them all.
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

cache=${XDG_CACHE_HOME:-$HOME/.cache}/mold/headers-alone
[ "${MOLD_HEADERS_CACHE:-on}" = off ] && cache=""
[ -z "$cache" ] || mkdir -p "$cache"
environment=$({
  cat "$0"
  "$cxx" --version
  printf '%s\n' "${torch_flags[@]}"
  dpkg-query -W -f '${Package} ${Version}\n' 2>/dev/null || true
} | sha256sum | cut -c1-64)

# dependencies HEADER torch|core: its dependency list (-M), or why it has none. Core
# headers: every file it reads; torch headers: mold's headers followed, every other one
# named but not opened (libtorch's come from the packages in the cache key).
dependencies() {
  local name=$1 kind=$2 tu=$3
  if [ "$kind" = core ]; then
    "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -M "$tu"
  else
    "$cxx" -std=c++17 -nostdinc -nostdinc++ -I"$include" -M -MG "$tu"
  fi
}

# key NAME KIND DEPS: the cache key of one check (the work folder's paths left out of
# it, so that another clone's build finds the same keys).
key() {
  local name=$1 kind=$2 deps=$3 files
  files=$(tr ' \\' '\n\n' <<<"$deps" | grep -v -e ':$' -e '^$' || true)
  {
    echo "$environment $kind $name"
    echo "${files//"$work"/WORK}"
    # The files it read (absolute paths; -MG names the ones it did not open as written).
    grep '^/' <<<"$files" | xargs -r -d '\n' cat --
  } | sha256sum | cut -c1-64
}

# prepare HEADER torch|core: the cheap half of a check (its dependencies, the torch-free
# headers' boundary, the torch headers' own includes); writes "ok" (passed before:
# cached), "compile KEY" (to be compiled) or what failed to TU.result.
prepare() {
  local header=$1 kind=$2 name tu deps
  name=${header#"$include/"}
  tu="$work/$(echo "$name" | tr '/.' '__').cpp"
  exec >"$tu.result"
  printf '#include <%s>\n#include <%s>\n' "$name" "$name" >"$tu"  # twice: include guards
  echo "$name $kind" >"$tu.what"
  if ! deps=$(dependencies "$name" "$kind" "$tu" 2>"$tu.err"); then
    if [ "$kind" = core ]; then
      echo "FAIL $name: does not compile alone with the SDK include dir:"
    else
      echo "FAIL $name: its includes of mold's headers do not resolve:"
    fi
    cat "$tu.err"; return
  fi
  if [ "$kind" = core ] && grep -Eq '/(ATen|c10|torch)/' <<<"$deps"; then
    echo "FAIL $name: a torch-free header reaches libtorch:"
    grep -Eo '[^ ]*/(ATen|c10|torch)/[^ ]*' <<<"$deps" | head -3; return
  fi
  if [ "$kind" = torch ] &&
    grep -v '^[[:space:]]*//' "$header" | grep -Eq '(^|[^[:alnum:]_])(at|c10|torch)::' &&
    ! grep -Eq '(^|[[:space:]])(ATen|c10|torch)/' <<<"$deps"; then
    echo "FAIL $name: its code names at::, c10:: or torch:: but it includes no libtorch" \
      "header; include the libtorch header it uses"; return
  fi
  local k
  k=$(key "$name" "$kind" "$deps")
  if [ -n "$cache" ] && [ -f "$cache/$k" ]; then echo ok; else echo "compile $k"; fi
}

# compile TU: the front end over it (after prepare), "ok" or what failed to TU.result.
compile() {
  local tu=$1 name kind k
  read -r name kind <"$tu.what"
  k=$(cut -d' ' -f2 "$tu.result")
  exec >"$tu.result"
  if [ "$kind" = core ]; then
    "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -fsyntax-only "$tu" \
      2>"$tu.err" || { echo "FAIL $name:"; cat "$tu.err"; return; }
  else
    "$cxx" -std=c++17 -I"$include" "${torch_flags[@]}" -include "$work/pch/aten.hpp" \
      -fsyntax-only "$tu" 2>"$tu.err" ||
      { echo "FAIL $name: does not compile alone with libtorch's include dirs:"; cat "$tu.err"; return; }
  fi
  [ -z "$cache" ] || : >"$cache/$k"
  echo ok
}

jobs_max=$(nproc) fail=0
while IFS= read -r h; do
  name=${h#"$include/"}
  if [ -f "$core_source/$name" ] || [ "$name" = mold/base/build_config.hpp ]; then kind=core
  elif [ -f "$torch_source/$name" ]; then kind=torch
  else echo "FAIL $name is installed but is in neither core/include nor torch/include"; fail=1; continue
  fi
  prepare "$h" "$kind" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done < <(find "$include/mold" -name '*.hpp' | sort)
wait
to_compile=$(grep -l '^compile ' "$work"/*.result 2>/dev/null | sed 's/\.result$//' || true)

# <ATen/ATen.h>, precompiled under the flags the torch headers are compiled with, when a
# torch header is to be compiled.
if [ -n "$to_compile" ] && grep -q ' torch$' $(sed 's/$/.what/' <<<"$to_compile"); then
  mkdir -p "$work/pch"
  echo '#include <ATen/ATen.h>' >"$work/pch/aten.hpp"
  "$cxx" -std=c++17 -I"$include" "${torch_flags[@]}" -x c++-header "$work/pch/aten.hpp" \
    -o "$work/pch/aten.hpp.gch" 2>"$work/pch/aten.err" ||
    { echo "FAIL <ATen/ATen.h> does not compile with libtorch's include dirs (${torch_flags[*]}):"
      cat "$work/pch/aten.err"; exit 1; }
fi
while IFS= read -r tu; do
  [ -n "$tu" ] || continue
  compile "$tu" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done <<<"$to_compile"
wait
compiled=$(grep -c . <<<"$to_compile" || true)
count=0
for result in "$work"/*.result; do
  if [ "$(cat "$result")" = ok ]; then count=$((count + 1)); else cat "$result"; fail=1; fi
done
# Nothing installed outside the areas.
stray=$(find "$include/mold" -maxdepth 1 -type f | head -3)
[ -z "$stray" ] || { echo "FAIL headers directly under include/mold: $stray"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "headers: $count installed headers compile alone ($compiled compiled now, the rest" \
  "unchanged since they passed)"
