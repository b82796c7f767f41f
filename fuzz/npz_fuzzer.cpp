#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return nuvec::fuzz::run(data, size, [](const auto& blob) {
    for (const auto& [name, a] : nuvec::io::load_npz(blob)) {
      nuvec::fuzz::touch(a);
    }
  });
}
