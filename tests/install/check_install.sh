#!/usr/bin/env bash
# Installs nuvec from a build tree into a scratch prefix, then builds and runs a
# consumer twice: through find_package(nuvec) and through pkg-config. The
# consumer gets the build tree's compiler flags, so sanitizer builds link alike.
set -euo pipefail
build_dir=$1
cxx_flags=${2:-}
source_dir=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null

cmake -S "$source_dir/consumer" -B "$scratch/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$scratch/prefix" \
  -DCMAKE_CXX_FLAGS="$cxx_flags" >/dev/null
cmake --build "$scratch/cmake-build" >/dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib" "$scratch/cmake-build/consumer"

export PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
# shellcheck disable=SC2046,SC2086
c++ $cxx_flags "$source_dir/consumer/main.cpp" -o "$scratch/pkg-consumer" $(pkg-config --cflags --libs nuvec)
LD_LIBRARY_PATH="$scratch/prefix/lib" "$scratch/pkg-consumer"
if [ -x "$scratch/prefix/bin/nuvec" ]; then
  "$scratch/prefix/bin/nuvec" help >/dev/null
fi
echo "install check: find_package and pkg-config consumers both built and ran; the installed nuvec program runs"
