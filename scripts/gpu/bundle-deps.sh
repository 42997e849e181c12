#!/usr/bin/env bash
# Downloads the Debian 12 packages that building mold needs besides libtorch (and besides
# what every Linux has: libc, libstdc++, a C++ compiler) into one tarball, for a GPU machine
# that has a CUDA build of PyTorch but no package registry (scripts/gpu/qualify.sh unpacks
# it into a private prefix). Run it on a Debian 12 machine that reaches the registry; it
# installs nothing.
#   scripts/gpu/bundle-deps.sh [OUT_DIR]     (default: build-gpu/deps)
# Writes OUT_DIR/mold-gpu-deps.tar (the .deb files, unextracted) and OUT_DIR/manifest.tsv
# (package, version, bytes, sha256), and prints the total size.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build-gpu/deps}

# What mold's CMakeLists.txt finds, as headers and libraries, and the tools to build it.
# libtorch is not here: the GPU machine's PyTorch brings its own (torch.utils).
wanted=(
  libboost1.74-dev libboost-filesystem1.74-dev libboost-program-options1.74-dev
  libfmt-dev libtomlplusplus-dev nlohmann-json3-dev catch2
  libpcre2-dev libicu-dev libpng-dev zlib1g-dev
  prometheus-cpp-dev
  cmake ninja-build ccache pkgconf
)
# Present on any machine that can run a compiler: never bundled (an older copy in the
# prefix would shadow the system's).
host_provided='^(libc6|libc6-dev|libgcc-s1|libstdc\+\+6|libstdc\+\+-12-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl2|libnsl-dev|libtirpc3|libtirpc-dev|libtirpc-common|gcc-12-base|debconf|dpkg|tar|perl-base|libselinux1|zlib1g|libzstd1|liblzma5|libbz2-1.0|libgssapi-krb5-2|libkrb5-3|libk5crypto3|libkrb5support0|libcom-err2|libkeyutils1|libssl3|libgmp10|libgcc-12-dev|libtsan2|libasan8|libubsan1|liblsan0|libitm1|libatomic1|libquadmath0|libgomp1|libcc1-0|g\+\+-12|gcc-12|cpp-12|binutils.*|libbinutils|libctf.*|libgprofng0|libsframe1|libjansson4|libisl23|libmpc3|libmpfr6|libstdc\+\+-.*)$'
# Run-time tools of the packages' maintainer scripts, never used by a build.
not_for_building='^(perl|perl-base|perl-modules-.*|libperl.*|libgdbm.*|libdb5\.3|procps|libprocps8|libsystemd0|init-system-helpers|adduser|passwd|libaudit.*|libcap-ng0|libpam.*|libsemanage.*|libsepol2|lsb-base|sysvinit-utils|dpkg-dev|make|patch|xz-utils|bzip2)$'

command -v apt-get >/dev/null || { echo "bundle-deps: needs apt-get (a Debian 12 machine)" >&2; exit 1; }
if ! grep -q 'VERSION_ID="12"' /etc/os-release 2>/dev/null; then
  echo "bundle-deps: this is not Debian 12; the packages must match the kit's (bookworm)" >&2
  exit 1
fi

# Every package the wanted ones need, recursively, less what the host provides and
# virtual names.
mapfile -t all < <(
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${wanted[@]}" |
    grep -E '^[a-z0-9]' | sort -u | grep -Ev "$host_provided" |
    grep -Ev "$not_for_building" || true)
packages=()
for p in "${all[@]}"; do
  # Virtual packages have no candidate version.
  if [ -n "$(apt-cache policy "$p" | awk '/Candidate:/ { if ($2 != "(none)") print $2 }')" ]; then
    packages+=("$p")
  fi
done
echo "bundle-deps: ${#packages[@]} packages for: ${wanted[*]}" >&2

rm -rf "$out/debs"
mkdir -p "$out/debs"
(cd "$out/debs" && apt-get download -qq "${packages[@]}")
{
  printf 'package\tversion\tbytes\tsha256\n'
  for deb in "$out"/debs/*.deb; do
    name=$(dpkg-deb -f "$deb" Package)
    version=$(dpkg-deb -f "$deb" Version)
    printf '%s\t%s\t%s\t%s\n' "$name" "$version" "$(stat -c %s "$deb")" \
      "$(sha256sum "$deb" | cut -d' ' -f1)"
  done
} >"$out/manifest.tsv"
tar -C "$out" -cf "$out/mold-gpu-deps.tar" debs manifest.tsv
rm -rf "$out/debs"
echo "bundle-deps: $out/mold-gpu-deps.tar, $(du -h "$out/mold-gpu-deps.tar" | cut -f1) ($(($(wc -l <"$out/manifest.tsv") - 1)) packages; manifest.tsv lists them)" >&2
