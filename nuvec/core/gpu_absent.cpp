// The GPU side of the backend seam in a build without a GPU backend: every node on a GPU stream fails with an
// error that says so (its outputs become failed arrays, as for any kernel error).

#include "nuvec/core/backend.h"
#include "nuvec/core/error.h"

namespace nuvec::detail {

void eval_gpu(const Primitive& primitive, const std::vector<array>&, std::vector<array>&, const Stream& stream) {
  throw_unsupported("[eval] " + std::string(name(primitive)) + " is on GPU stream " + std::to_string(stream.index) +
                    ": no GPU backend in this build.");
}

}  // namespace nuvec::detail
