#!/usr/bin/env bash
# Every installed public header compiles alone. Headers of the torch-free areas (the
# mold::core component) are compiled with the SDK include dir only and must reach no
# libtorch header (checked in the compiler's dependency list, since a system may keep
# libtorch's headers in /usr/include); headers of the torch areas (mold::torch) get
# libtorch's include dirs.
#   check_headers.sh BUILD_DIR WORK_DIR CXX "CORE_AREAS" "TORCH_AREAS" TORCH_INCLUDE_DIR...
set -euo pipefail
build_dir=$1 work=$2 cxx=$3 core_areas=$4 torch_areas=$5
shift 5
torch_flags=()
for dir in "$@"; do torch_flags+=("-isystem" "$dir"); done

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
include="$work/prefix/include"

fail=0 count=0
check() {  # AREA HEADER torch|core
  local header=$1 kind=$2 name tu deps
  name=${header#"$include/"}
  tu="$work/$(echo "$name" | tr '/.' '__').cpp"
  printf '#include <%s>\n#include <%s>\n' "$name" "$name" >"$tu"  # twice: include guards
  if [ "$kind" = core ]; then
    if ! deps=$("$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -M "$tu" 2>"$tu.err"); then
      echo "FAIL $name: does not compile alone with the SDK include dir:"; cat "$tu.err"; fail=1; return
    fi
    if grep -Eq '/(ATen|c10|torch)/' <<<"$deps"; then
      echo "FAIL $name: a torch-free header reaches libtorch:"
      grep -Eo '[^ ]*/(ATen|c10|torch)/[^ ]*' <<<"$deps" | head -3; fail=1; return
    fi
    "$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$include" -fsyntax-only "$tu" 2>"$tu.err" ||
      { echo "FAIL $name:"; cat "$tu.err"; fail=1; return; }
  else
    "$cxx" -std=c++17 -I"$include" "${torch_flags[@]}" -fsyntax-only "$tu" 2>"$tu.err" ||
      { echo "FAIL $name: does not compile alone with libtorch's include dirs:"; cat "$tu.err"; fail=1; return; }
  fi
  count=$((count + 1))
}

for area in $core_areas; do
  for h in "$include/mold/$area"/*.hpp; do check "$h" core; done
done
for area in $torch_areas; do
  for h in "$include/mold/$area"/*.hpp; do check "$h" torch; done
done
# Nothing installed outside the areas.
stray=$(find "$include/mold" -maxdepth 1 -type f | head -3)
[ -z "$stray" ] || { echo "FAIL headers directly under include/mold: $stray"; fail=1; }
for dir in "$include/mold"/*/; do
  area=$(basename "$dir")
  case " $core_areas $torch_areas " in *" $area "*) ;; *) echo "FAIL unknown area $area"; fail=1 ;; esac
done
[ $fail -eq 0 ] || exit 1
echo "headers: $count installed headers compile alone"
