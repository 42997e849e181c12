#!/usr/bin/env bash
# The GPU qualification run: on a Linux machine with an NVIDIA GPU and a CUDA build of
# PyTorch 2.x but no package registry, builds mold against that PyTorch's libtorch (the
# other dependencies from the Debian packages scripts/gpu/bundle-deps.sh downloaded,
# unpacked into a private prefix), runs the torch and cli test tiers, runs the tiny models
# on the GPU (estimates learned from what it measures), calibrates every op of both
# families on it, checks the backend's memory statistics against PyTorch's view of the
# device, looks for leaks over 20 images, and writes one report.
#   scripts/gpu/qualify.sh OUT [--backend cuda|cpu] [--deps TAR] [--torch-prefix DIR]
#                              [--jobs N] [--skip-tests]
# --backend cpu is the dry run of the whole script on a machine without a GPU (the VAEs
# then at the tiny architecture, small sizes). --deps: the bundle (default:
# build-gpu/deps/mold-gpu-deps.tar when it exists; without one, the system's packages).
# --torch-prefix: the directory holding Torch/TorchConfig.cmake (default: PyTorch's
# torch.utils.cmake_prefix_path; on the dry run, Debian's libtorch-dev).
# Every step's outcome and time go to OUT/steps.tsv as it ends; the first step that fails
# stops the run, and OUT/report.json (with OUT/leak-*.html and OUT/calibration/) keeps what
# was measured up to there. Exit: 0 qualified; 1 a step failed; 2 usage.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 1 ] || usage
case "$1" in -*) usage ;; esac
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
backend=cuda deps="" torch_prefix="" jobs=$(nproc) skip_tests=0
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=${2:?--backend needs cuda or cpu}; shift 2 ;;
    --deps) deps=${2:?--deps needs the bundle}; shift 2 ;;
    --torch-prefix) torch_prefix=${2:?--torch-prefix needs a directory}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --skip-tests) skip_tests=1; shift ;;
    *) echo "qualify: unknown option $1" >&2; usage ;;
  esac
done
case "$backend" in cuda | cpu) ;; *) echo "qualify: --backend $backend: give cuda or cpu" >&2; exit 2 ;; esac
if [ -z "$deps" ] && [ -f build-gpu/deps/mold-gpu-deps.tar ]; then
  deps=$repo/build-gpu/deps/mold-gpu-deps.tar
fi
[ -z "$deps" ] || [ -f "$deps" ] || { echo "qualify: --deps $deps: no such file" >&2; exit 2; }

prefix=$out/prefix
build=$out/build
bin=$build/bin
export XDG_STATE_HOME=$out/state    # the measured history of this run alone
export XDG_CONFIG_HOME=$out/config
export CCACHE_DIR=${CCACHE_DIR:-$out/ccache}
mkdir -p "$out/logs" "$out/runs" "$out/calibration" "$out/images"
: >"$out/steps.tsv"
started=$(date +%s)
device="" torch_version=""

# step NAME COMMAND...: runs COMMAND (its output in OUT/logs/NAME.log), records the
# outcome and time; a failure writes the report and stops.
step() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s%N)
  echo "qualify: $name ..." >&2
  "$@" >"$out/logs/$name.log" 2>&1
  rc=$?
  local seconds
  seconds=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  printf '%s\t%s\t%s\n' "$name" "$([ $rc -eq 0 ] && echo ok || echo "failed ($rc)")" \
    "$seconds" >>"$out/steps.tsv"
  echo "qualify: $name $([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)") in $seconds s" >&2
  if [ $rc -ne 0 ]; then
    tail -n 25 "$out/logs/$name.log" >&2
    report
    echo "qualify: stopped at $name; what was measured is in $out/report.json" >&2
    exit 1
  fi
}

preflight() {
  command -v c++ >/dev/null || { echo "no C++ compiler (c++) on PATH"; return 1; }
  c++ --version | head -1
  command -v python3 >/dev/null || { echo "no python3 on PATH"; return 1; }
  if [ "$backend" = cuda ]; then
    command -v nvidia-smi >/dev/null || { echo "no nvidia-smi: is this a GPU machine?"; return 1; }
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 - <<'PY' || return 1
import sys, torch, torch.utils
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
print("prefix", torch.utils.cmake_prefix_path)
if not torch.cuda.is_available():
    sys.exit("PyTorch sees no CUDA device")
if not torch._C._GLIBCXX_USE_CXX11_ABI:
    sys.exit("this PyTorch uses the pre-C++11 ABI, mold's Debian dependencies the "
             "C++11 one: give --torch-prefix of a cxx11-ABI libtorch of the same version")
PY
    [ -n "$torch_prefix" ] ||
      torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  elif [ -z "$torch_prefix" ]; then
    torch_prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null ||
      echo /usr/lib/x86_64-linux-gnu/cmake)
  fi
  [ -f "$torch_prefix/Torch/TorchConfig.cmake" ] ||
    { echo "no Torch/TorchConfig.cmake under $torch_prefix: give --torch-prefix"; return 1; }
  echo "torch prefix $torch_prefix"
}

unpack() {
  rm -rf "$prefix" "$out/debs"
  mkdir -p "$prefix" "$out/debs"
  tar -xf "$deps" -C "$out/debs" || return 1
  local deb n=0
  for deb in "$out"/debs/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$prefix" || return 1
    else # a .deb is an ar archive holding data.tar.{xz,zst,gz}
      (cd "$out/debs" && ar x "$deb" && tar -xf data.tar.* -C "$prefix" && rm -f data.tar.* control.tar.* debian-binary) ||
        return 1
    fi
    n=$((n + 1))
  done
  # A -dev package's libX.so whose runtime library the host provides (zlib1g) dangles in
  # the prefix: point it at the host's copy of that soname, else the linker takes the
  # static libX.a (not built for shared objects); with no host copy, drop the .a too.
  local link soname dir found
  while IFS= read -r link; do
    soname=$(basename "$(readlink "$link")" | sed -E 's/^(lib[^.]+\.so\.[0-9]+).*/\1/')
    found=""
    for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib /lib; do
      [ -e "$dir/$soname" ] && { found=$dir/$soname; break; }
    done
    if [ -n "$found" ]; then
      ln -sf "$found" "$link" && echo "$(basename "$link") -> $found"
    else
      rm -f "$link" "${link%.so}.a" && echo "$(basename "$link"): no $soname on this host, removed"
    fi
  done < <(find "$prefix" -xtype l -name 'lib*.so')
  echo "$n packages into $prefix ($(du -sh "$prefix" | cut -f1))"
  rm -rf "$out/debs"
}

# The prefix's tools and libraries first; pkg-config reads the prefix's .pc files only.
use_prefix() {
  [ -d "$prefix/usr" ] || return 0
  export PATH=$prefix/usr/bin:$PATH
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig:$prefix/usr/share/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=$prefix
}

configure() {
  local prefixes=$torch_prefix
  [ -d "$prefix/usr" ] && prefixes="$prefix/usr;$torch_prefix"
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefixes" -DMOLD_BUILD_BENCH=OFF -DMOLD_INSTALL=OFF || return 1
  [ -d "$prefix/usr" ] || return 0
  # Each dependency found in the prefix, none taken from the system by mistake.
  local key value bad=0
  for key in fmt_DIR tomlplusplus_DIR nlohmann_json_DIR Boost_DIR Catch2_DIR \
    prometheus-cpp_DIR PNG_LIBRARY_RELEASE pkgcfg_lib_PCRE2_pcre2-8 pkgcfg_lib_ICU_UC_icuuc \
    ICU_UC_INCLUDEDIR; do
    value=$(grep -E "^$key(:[A-Z]+)?=" "$build/CMakeCache.txt" | head -1 | cut -d= -f2-)
    case "$value" in
      "$prefix"/*) echo "$key: $value" ;;
      *) echo "$key is '$value', not in $prefix"; bad=1 ;;
    esac
  done
  return $bad
}

build_all() { cmake --build "$build" -j "$jobs"; }

run_tests() {
  ctest --test-dir "$build" -j "$jobs" --timeout 600 -L '^(torch|cli)$' -L random_order \
    --output-on-failure
}

# Tiny runs on the backend at six sizes per family, each recorded into the history:
# later runs' estimates learn from earlier ones.
tiny_runs() {
  local model size i=0
  for model in z-image-turbo qwen-image; do
    for size in 128 384 256 512 192 320; do
      "$bin/mold" run "$model" "a red fox in the snow" --tiny --backend "$backend" \
        --width "$size" --height "$size" --steps 2 --json -o "$out/images" \
        >"$out/runs/$model-$size.json" || return 1
      i=$((i + 1))
    done
  done
  echo "$i runs"
}

# mold's statistics of the device against what PyTorch sees of it (cuda), or the
# tracking allocator's own consistency (cpu).
check_stats() {
  python3 - "$out/runs/z-image-turbo-512.json" "$backend" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
backend = sys.argv[2]
after = run["phases"][-1]["after"]
print("mold:", {k: after[k] for k in ("total", "free", "allocated", "reserved", "device_used")})
if after["allocated"] > after["reserved"]:
    sys.exit("allocated above reserved")
if backend == "cuda":
    import torch
    free, total = torch.cuda.mem_get_info()
    print("cudaMemGetInfo: total", total, "free", free)
    if after["total"] != total:
        sys.exit(f"total {after['total']} is not cudaMemGetInfo's {total}")
    if after["device_used"] < after["reserved"]:
        sys.exit("device_used below what mold's allocator reserved")
elif after["total"] == 0:
    sys.exit("no total")
PY
}

calibrate() {
  local family op sizes arch steps
  for family in zimage qwen_image; do
    steps=1 # Qwen-Image's schedule takes at least 2
    [ "$family" = qwen_image ] && steps=2
    cp "$build/lib/mold/plugins/$family.calibration.toml" "$out/calibration/" || return 1
    for op in text_encode denoise; do
      "$bin/molddiag" calibrate --family "$family" --op "$op" --backend "$backend" \
        --arch tiny --sizes 64,192,384 --tokens 16,160 --dtype bfloat16 --steps "$steps" \
        --write "$out/calibration/$family.calibration.toml" || return 1
    done
    if [ "$family" = qwen_image ]; then # the edit model's vision encoder
      "$bin/molddiag" calibrate --family qwen_image --op vision_encode \
        --model qwen-image-edit-2511 --images 1,2 --backend "$backend" --arch tiny \
        --sizes 64,128 --tokens 16 --dtype bfloat16 --steps 2 \
        --write "$out/calibration/$family.calibration.toml" || return 1
    fi
    if [ "$backend" = cuda ]; then arch=default sizes=512,768,1024; else arch=tiny sizes=64,128,192; fi
    for op in vae_decode vae_encode; do
      "$bin/molddiag" calibrate --family "$family" --op "$op" --backend "$backend" \
        --arch "$arch" --sizes "$sizes" --dtype bfloat16 \
        --write "$out/calibration/$family.calibration.toml" || return 1
    done
  done
  # The same ops from what the tiny runs recorded.
  local history
  history=$(ls "$XDG_STATE_HOME"/mold/history/*.jsonl | head -1)
  for family in zimage qwen_image; do
    "$bin/molddiag" calibrate --family "$family" --op denoise --arch tiny \
      --from-history "$history" >"$out/calibration/$family-from-history.txt" || return 1
  done
}

# 20 images of each tiny model; a clean run is exit 0 (3: a leak, 4: parity broken).
leak() {
  local model
  for model in z-image-turbo qwen-image; do
    "$bin/molddiag" leak "$model" --tiny --backend "$backend" --images 20 \
      --json --html "$out/leak-$model.html" >"$out/leak-$model.json" || return 1
  done
}

report() {
  python3 - "$out" "$backend" "$started" <<'PY' || echo "qualify: the report could not be written" >&2
import glob, json, os, sys, time
out, backend, started = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = []
for line in open(os.path.join(out, "steps.tsv")):
    name, status, seconds = line.rstrip("\n").split("\t")
    steps.append({"step": name, "status": status, "seconds": float(seconds)})
phases = []
for path in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    try:
        run = json.load(open(path))
    except Exception:
        continue
    for p in run.get("phases", []):
        if p.get("status") != "done":
            continue
        peak = max(p["after"]["peak_allocated"] - p["before"]["allocated"],
                   p["after"]["peak_reserved"] - p["before"]["reserved"], 0)
        w = p["workload"]
        phases.append({"model": run.get("model"), "op": p["phase"],
                       "size": w.get("width"), "tokens": w.get("tokens"),
                       "estimate_bytes": p["estimate_bytes"], "peak_bytes": peak,
                       "ratio": round(p["estimate_bytes"] / peak, 4) if peak else None,
                       "origin": p.get("estimate_origin")})
leak = {}
for path in sorted(glob.glob(os.path.join(out, "leak-*.json"))):
    model = os.path.basename(path)[len("leak-"):-len(".json")]
    try:
        found = json.load(open(path)).get("leak", {})
        leak[model] = {k: found.get(k) for k in ("verdict", "summary", "images", "warmup")}
    except Exception:
        leak[model] = {"verdict": "unreadable report"}
report = {"kit": "scripts/gpu/qualify.sh", "backend": backend,
          "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
          "seconds": int(time.time()) - started, "steps": steps,
          "qualified": bool(steps) and all(s["status"] == "ok" for s in steps),
          "estimates": phases, "leak": leak,
          "calibration": sorted(os.path.basename(p) for p in
                                glob.glob(os.path.join(out, "calibration", "*")))}
for name in ("preflight", "configure"):
    log = os.path.join(out, "logs", name + ".log")
    if os.path.exists(log):
        report[name] = open(log).read()[-4000:]
json.dump(report, open(os.path.join(out, "report.json"), "w"), indent=2)
print(f"qualify: report in {out}/report.json")
PY
}

step preflight preflight
if [ -n "$deps" ]; then step unpack unpack; fi
use_prefix
step configure configure
step build build_all
[ "$skip_tests" -eq 1 ] || step tests run_tests
step tiny-runs tiny_runs
step stats check_stats
step calibrate calibrate
step leak leak
report
echo "qualify: qualified $backend in $(($(date +%s) - started)) s; $out/report.json" >&2
