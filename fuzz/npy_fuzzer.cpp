#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return nuvec::fuzz::run(data, size, [](const auto& blob) { nuvec::fuzz::touch(nuvec::io::load_npy(blob)); });
}
