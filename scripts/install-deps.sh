#!/usr/bin/env bash
# Installs the Debian packages nuvec needs to build, test and benchmark.
# Idempotent: only missing packages are installed, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwy-dev libsleef-dev libdnnl-dev libopenblas-dev liblapacke-dev zlib1g-dev
  python3 python3-numpy python3-torch
  dataset-fashion-mnist  # IDX files for the io tests and the Fashion-MNIST demo
  fortunes  # the text corpus of nuvec gpt
  clang libclang-rt-dev  # libFuzzer for fuzz/run.sh
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "nuvec: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Test client: Hugging Face's GGUF reader, which the io tests run with the machine's Node.js when present.
npm_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/npm"
if command -v npm >/dev/null && [[ ! -d "$npm_dir/node_modules/@huggingface/gguf" ]]; then
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" @huggingface/gguf@0.4.6 || \
    echo "nuvec: npm could not install @huggingface/gguf; the GGUF cross-check test will be skipped"
fi
