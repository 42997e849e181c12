#!/usr/bin/env bash
# Installs the mold build in BUILD_DIR into a fresh prefix, builds the example plugin in
# SDK_DIR and the plugin of the plugin guide (GUIDE, its blocks marked "guide-file")
# against it with find_package(mold), and loads both through the installed molddiag.
set -euo pipefail
build_dir=$1 sdk_dir=$2 work=$3 guide=$4

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$sdk_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log"

molddiag="$work/prefix/bin/molddiag"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/config"
unset MOLD_CONFIG MOLD_PLUGIN_PATH

fail() { echo "sdk test: $*" >&2; exit 1; }

plugins=$("$molddiag" plugins --json --strict --plugin-dir "$work/build")
for name in example_family qwen_image zimage backend_cuda backend_metal; do
  grep -q "\"name\": \"$name\"" <<<"$plugins" || fail "plugin $name not listed: $plugins"
done
grep -q '"version": "1.2.3"' <<<"$plugins" || fail "example plugin version missing"

out=$("$molddiag" estimate --plugin-dir "$work/build" --family example_family --op vae_decode \
  --backend cuda --width 100 --height 100 --dtype float32 --json)
grep -q '"bytes": 40000000' <<<"$out" || fail "calibration estimate wrong: $out"
grep -q 'example_family.calibration.toml \[vae_decode.cuda\]' <<<"$out" || fail "source: $out"

out=$("$molddiag" estimate --plugin-dir "$work/build" --family example_family --op denoise \
  --backend metal --width 64 --height 64 --batch 3 --json)
grep -q '"bytes": 3221225472' <<<"$out" || fail "code estimator wrong: $out"

# The plugin of docs/plugin-guide.md, exactly as the guide shows it.
mkdir -p "$work/guide"
awk -v dir="$work/guide" '
  /<!-- guide-file: / { file = $3; getline; inside = 1; next }
  inside && /^```$/ { inside = 0; next }
  inside { print > (dir "/" file) }' "$guide"
[ -f "$work/guide/example_plugin.cpp" ] && [ -f "$work/guide/CMakeLists.txt" ] ||
  fail "the plugin guide no longer marks its example files"
cmake -S "$work/guide" -B "$work/guide/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/guide-configure.log" || fail "guide example: configure failed (see $work/guide-configure.log)"
cmake --build "$work/guide/build" >"$work/guide-build.log" ||
  fail "guide example: build failed (see $work/guide-build.log)"
out=$("$molddiag" estimate --plugin-dir "$work/guide/build" --family example --op vae_decode \
  --backend cuda --width 1024 --height 1024 --json)
grep -q '"bytes": 3145728000' <<<"$out" || fail "guide example estimate wrong: $out"
grep -q '"estimator": "example/vae_decode/\*"' <<<"$out" || fail "guide example key: $out"

# The installed headers compile without libtorch on the include path.
printf '#include <mold/plugin/plugin.hpp>\n#include <mold/plugin/registry.hpp>\n#include <mold/estimate/calibration.hpp>\nint main(){}\n' \
  >"$work/headers.cpp"
c++ -std=c++17 -fsyntax-only -I"$work/prefix/include" "$work/headers.cpp" ||
  fail "installed headers need more than the SDK include dir"
echo "sdk test: ok"
