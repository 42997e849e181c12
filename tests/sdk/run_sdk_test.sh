#!/usr/bin/env bash
# Installs the mold build in BUILD_DIR into a fresh prefix, builds the example plugin in
# SDK_DIR and the plugin of the plugin guide (GUIDE, its blocks marked "guide-file")
# against it with find_package(mold), and loads both through the installed molddiag.
set -euo pipefail
build_dir=$1 sdk_dir=$2 work=$3 guide=$4

rm -rf "$work"
mkdir -p "$work"
# The plugins below are built through ccache when it is installed (paths relative to
# the work folder, so a clone elsewhere hits).
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fi
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
# Its classifier and its backend's hint provider answer through molddiag classify.
out=$("$molddiag" classify --plugin-dir "$work/guide/build" --backend example \
  "example: device out of memory (requested 64.00 MiB)")
grep -q 'requested 64.00 MiB' <<<"$out" || fail "guide example classifier: $out"
grep -q 'EXAMPLE_POOL_SIZE' <<<"$out" || fail "guide example hint provider: $out"

# A consumer of the torch component finds libtorch through the package (find_dependency).
mkdir -p "$work/torch-consumer"
cat >"$work/torch-consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(torch_consumer LANGUAGES CXX)
find_package(mold 0.1 REQUIRED COMPONENTS torch)
add_executable(torch_consumer main.cpp)
target_link_libraries(torch_consumer PRIVATE mold::torch)
CMAKE
cat >"$work/torch-consumer/main.cpp" <<'CPP'
#include <mold/plan/conv_plan.hpp>
#include <mold/tensor/bounded_conv.hpp>
#include <iostream>
int main() {
  const at::Tensor x = at::ones({1, 2, 9, 9}), w = at::ones({3, 2, 3, 3});
  const at::Tensor y = mold::bounded_conv2d(x, w, {}, {1}, {1}, {1}, 1, 4096);
  std::cout << y.sum().item<double>() << "\n";
}
CPP
cmake -S "$work/torch-consumer" -B "$work/torch-consumer/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/torch-configure.log" 2>&1 ||
  fail "COMPONENTS torch: configure failed (see $work/torch-configure.log)"
cmake --build "$work/torch-consumer/build" >"$work/torch-build.log" 2>&1 ||
  fail "COMPONENTS torch: build failed (see $work/torch-build.log)"
# 9x9 output of 3 channels; each sums its 3x3x2 window of ones, less at the border.
[ "$("$work/torch-consumer/build/torch_consumer")" = "3750" ] || fail "torch consumer result"
# An unknown component is refused with a message naming it.
mkdir -p "$work/bad-component"
printf 'cmake_minimum_required(VERSION 3.22)\nproject(p LANGUAGES CXX)\nfind_package(mold 0.1 REQUIRED COMPONENTS tensorflow)\n' \
  >"$work/bad-component/CMakeLists.txt"
if cmake -S "$work/bad-component" -B "$work/bad-component/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/bad-component.log" 2>&1; then
  fail "an unknown component was accepted"
fi
grep -q "no component 'tensorflow'" "$work/bad-component.log" || fail "unknown component message"
# The family with a pipeline of docs/plugin-guide.md ("guide-family-file" blocks), built
# against the install with COMPONENTS torch, run by the installed mold and profiled by the
# installed molddiag: clean, and its planted leak found and attributed.
mkdir -p "$work/guide-family"
awk -v dir="$work/guide-family" '
  /<!-- guide-family-file: / { file = $3; getline; inside = 1; next }
  inside && /^```$/ { inside = 0; next }
  inside { print > (dir "/" file) }' "$guide"
[ -f "$work/guide-family/toy_family.cpp" ] && [ -f "$work/guide-family/CMakeLists.txt" ] ||
  fail "the plugin guide no longer marks its family example's files"
cmake -S "$work/guide-family" -B "$work/guide-family/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/family-configure.log" 2>&1 ||
  fail "guide family: configure failed (see $work/family-configure.log)"
cmake --build "$work/guide-family/build" >"$work/family-build.log" 2>&1 ||
  fail "guide family: build failed (see $work/family-build.log)"
family_dir="$work/guide-family/build"
"$work/prefix/bin/mold" run toy-model "anything" --tiny --plugin-dir "$family_dir" \
  --output "$work/family-out" 2>"$work/family-run.log" ||
  fail "mold run of the guide family failed: $(cat "$work/family-run.log")"
[ -f "$work/family-out/toy-model-0.png" ] || fail "mold run wrote no toy-model-0.png"
status=0
out=$("$molddiag" leak toy-model --tiny --plugin-dir "$family_dir" --images 8 --quiet) ||
  status=$?
[ "$status" = 0 ] || fail "the clean guide family: molddiag leak exit $status: $out"
status=0
out=$("$molddiag" leak toy-model:leaky --tiny --plugin-dir "$family_dir" --images 8 \
  --quiet) || status=$?
[ "$status" = 3 ] || fail "the leaky guide family: molddiag leak exit $status: $out"
grep -q "LEAK: allocated grows 128.00 KiB per image" <<<"$out" || fail "leak slope: $out"
grep -q "kept by:    denoise (denoiser, exact), 128.00 KiB per image" <<<"$out" ||
  fail "leak attribution: $out"
echo "sdk test: ok"
