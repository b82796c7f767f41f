#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer, and runs each one for
# SECONDS seconds (default 60) from its seed corpus in fuzz/corpus/<parser>, JOBS (default: the cores) at once. New
# inputs go to build/fuzz/corpus; a crash leaves its input in build/fuzz/ and makes the script fail.
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
# The sanitizers instrument the parsers (nuvec/io) and the fuzz targets only, optimized at -O1; the rest of the
# library builds plain and unoptimized, which keeps this build a fraction of a sanitized full build (CI runs it on two
# cores: the kernels' files took 4x longer to compile at -O1, nine minutes for the whole build).
sanitize="-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0 -DNDEBUG" -DNUVEC_FUZZ_SANITIZE="$sanitize" \
  -DNUVEC_BUILD_FUZZERS=ON -DNUVEC_BUILD_TESTS=OFF -DNUVEC_BUILD_BENCH=OFF -DNUVEC_BUILD_EXAMPLES=OFF \
  -DNUVEC_BUILD_APPS=OFF -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" > /dev/null
targets=()
for p in "${parsers[@]}"; do
  targets+=("${p}_fuzzer")
done
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1"
# One fuzzer a core (JOBS at a time), each writing its log and its exit status beside the corpus; the logs' tails
# print in the parsers' order once all are done.
fuzz_one() {
  local p=$1 status=0
  mkdir -p "$build/corpus/$p"
  (cd "$build" && "./fuzz/${p}_fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -print_final_stats=1 "corpus/$p" "../../fuzz/corpus/$p") > "$build/$p.log" 2>&1 || status=$?
  echo "$status" > "$build/$p.status"
}
for p in "${parsers[@]}"; do
  while (($(jobs -rp | wc -l) >= ${JOBS:-$(nproc)})); do
    wait -n || true
  done
  fuzz_one "$p" &
done
wait
failed=()
for p in "${parsers[@]}"; do
  echo "== $p: ${seconds}s"
  tail -n 12 "$build/$p.log"
  if [[ "$(cat "$build/$p.status")" != 0 ]]; then
    failed+=("$p")
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzzing failed: ${failed[*]} (logs in $build)" >&2
  exit 1
fi
