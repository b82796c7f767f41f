#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return nuvec::fuzz::run(data, size, [](const auto& blob) {
    for (auto mode : {nuvec::io::GGUFQuantized::packed, nuvec::io::GGUFQuantized::dequantize}) {
      auto [tensors, metadata] = nuvec::io::load_gguf(blob, mode);
      for (const auto& [name, a] : tensors) {
        nuvec::fuzz::touch(a);
      }
      for (const auto& [key, value] : metadata) {
        if (const auto* a = std::get_if<nuvec::array>(&value)) {
          nuvec::fuzz::touch(*a);
        }
      }
    }
  });
}
