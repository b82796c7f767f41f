#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer, and runs each one for
# SECONDS seconds (default 60) from its seed corpus in fuzz/corpus/<parser>. New inputs go to build/fuzz/corpus;
# a crash leaves its input in build/fuzz/ and makes the script fail.
# Usage: fuzz/run.sh [SECONDS] [parser...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
parsers=("$@")
if ((${#parsers[@]} == 0)); then
  parsers=(idx npy npz safetensors gguf)
fi
build=build/fuzz
# The sanitizers instrument the parsers (nuvec/io) and the fuzz targets only; the rest of the library builds
# plain at -O1, which keeps this build a fraction of a sanitized full build (CI runs it on two cores).
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DNUVEC_FUZZ_SANITIZE="$sanitize" \
  -DNUVEC_BUILD_FUZZERS=ON -DNUVEC_BUILD_TESTS=OFF -DNUVEC_BUILD_BENCH=OFF -DNUVEC_BUILD_EXAMPLES=OFF \
  -DNUVEC_BUILD_APPS=OFF -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
targets=()
for p in "${parsers[@]}"; do
  targets+=("${p}_fuzzer")
done
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1"
for p in "${parsers[@]}"; do
  mkdir -p "$build/corpus/$p"
  echo "== $p: ${seconds}s"
  (cd "$build" && "./fuzz/${p}_fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -print_final_stats=1 "corpus/$p" "../../fuzz/corpus/$p" 2>&1 | tail -n 12)
done
