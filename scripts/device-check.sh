#!/usr/bin/env bash
# The CUDA backend's check on a machine with an NVIDIA GPU, in two halves:
#
#   scripts/device-check.sh pack [BUILD] [DIR]
#       here, after a build with the CUDA backend (default BUILD build/release, DIR .device/check): the GPU suite,
#       the GPU benchmark, the nuvec command and model writer, and every library they load that is not the C
#       library's, libstdc++'s or the CUDA toolkit's, into DIR/bundle.tar.xz (stripped; about 25 MB).
#   scripts/device-check.sh run [DIR [STEP ...]]
#       there (a GPU, the CUDA 13 toolkit in /usr/local/cuda; no build needed): unpacks the bundle, runs the GPU
#       suite (tests), an lm generation on the GPU against the CPU's (greedy, same ids: lm), a GPT training run on
#       the GPU (gpt) and the benchmark (bench), or the STEPs named; prints a summary last. Logs go to $OUT when set (the device tool's folder), else DIR, with
#       kernels.tar.xz, the kernels NVRTC compiled: put it in DIR and the next run starts with them compiled. The
#       suite's NVRTC-only tests (no GPU needed) are left to the normal test run.
set -euo pipefail

mode=${1:-}
case "$mode" in
pack)
  build=${2:-build/release}
  dir=${3:-.device/check}
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bin" "$stage/lib" "$dir"
  for program in tests/cuda_tests bench/cuda_bench apps/nuvec bench/nuvec_lm_models; do
    cp "$build/$program" "$stage/bin/"
  done
  # The libraries the programs load, but the C runtime's and the toolkit's, which the GPU machine has.
  for program in "$stage"/bin/*; do
    ldd "$program" | awk '$3 ~ /^\// {print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libdl|librt|libpthread)\.so|/usr/local/cuda' |
    while read -r library; do cp -L "$library" "$stage/lib/"; done
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true
  tar -C "$stage" -cf - bin lib | xz -T0 -3 > "$dir/bundle.tar.xz"
  ls -l "$dir/bundle.tar.xz"
  ;;
run)
  dir=${2:-.device/check}
  logs=${OUT:-$dir}
  work=$(mktemp -d)
  tar -C "$work" -xJf "$dir/bundle.tar.xz"
  export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  export NUVEC_KERNEL_CACHE="$work/kernels"
  mkdir -p "$NUVEC_KERNEL_CACHE"
  if [ -f "$dir/kernels.tar.xz" ]; then
    tar -C "$NUVEC_KERNEL_CACHE" -xJf "$dir/kernels.tar.xz"
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi: no GPU found"
  summary=()
  step() {  # step NAME SECONDS COMMAND...: runs it for at most SECONDS, output in $logs/NAME.log; notes the result
    local name=$1
    local limit=$2
    shift 2
    local start=$SECONDS
    if timeout "$limit" "$@" > "$logs/$name.log" 2>&1; then
      summary+=("PASS $name ($((SECONDS - start)) s)")
    else
      summary+=("FAIL $name ($((SECONDS - start)) s): see $name.log")
    fi
    tail -n 5 "$logs/$name.log"
  }
  steps=("${@:3}")
  [ ${#steps[@]} -gt 0 ] || steps=(tests lm gpt bench)
  export work
  generate() { "$work/bin/nuvec" generate --device "$1" --model "$work/small.gguf" --prompt-ids 1,2,3,4,5 \
    --max-tokens 24 --json; }
  compare_generation() {
    "$work/bin/nuvec_lm_models" write --shape small --type F16 --out "$work/small.gguf" > /dev/null &&
      generate cpu > "$work/cpu.json" && generate gpu > "$work/gpu.json" &&
      python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); g=json.load(open(sys.argv[2])); \
print("cpu", c["generated_ids"]); print("gpu", g["generated_ids"]); sys.exit(c["generated_ids"] != g["generated_ids"])' \
        "$work/cpu.json" "$work/gpu.json"
  }
  export -f generate compare_generation
  for name in "${steps[@]}"; do
    case "$name" in
    tests)
      step cuda_tests 300 "$work/bin/cuda_tests" --gtest_brief=1 '--gtest_filter=-*Nvrtc*'
      grep -E -A2 "Failure$" "$logs/cuda_tests.log" | head -n 60 || true
      ;;
    lm) step lm_generation 90 bash -c compare_generation ;;
    gpt)
      mkdir -p "$work/fortunes"
      python3 -c 'import random; random.seed(1); w=["the","fortune","of","a","day","is","bright","and","kind","you","will","find","luck"]; \
print("\n%\n".join(" ".join(random.choice(w) for _ in range(12)) for _ in range(400)))' > "$work/fortunes/corpus"
      step gpt_training 90 "$work/bin/nuvec" gpt --device gpu --steps 30 --corpus "$work/fortunes" \
        --output "$work/gpt" --sample 20
      ;;
    bench) step cuda_bench 150 "$work/bin/cuda_bench" ;;
    *) echo "unknown step $name" && exit 2 ;;
    esac
  done
  tar -C "$NUVEC_KERNEL_CACHE" -cf - . | xz -T0 -3 > "$logs/kernels.tar.xz"
  printf '%s\n' "${summary[@]}"
  ;;
*)
  sed -n '2,15p' "$0"
  exit 2
  ;;
esac
