#pragma once

#include <string_view>

namespace nuvec::cuda {

/// The text of nuvec/cuda/kernels/`file`, as built into the library.
std::string_view kernel_source(std::string_view file);

}  // namespace nuvec::cuda
