#include "nuvec/nn/dropout.h"

#include "nuvec/core/op_prefix.h"
#include "nuvec/core/ops.h"
#include "nuvec/core/random.h"
#include "nuvec/nn/scalar.h"

namespace nuvec::nn {

DropoutBase::DropoutBase(std::string name, float p, int spatial) : name_(std::move(name)), p_(p), spatial_(spatial) {
  if (!(p >= 0.0F && p < 1.0F)) {
    throw_invalid(nuvec::detail::op_prefix(name_) + "p must be in [0, 1); given " + std::to_string(p) + ".");
  }
}

array DropoutBase::forward(const array& x) {
  if (spatial_ > 0 && x.ndim() != spatial_ + 2 && x.ndim() != spatial_ + 1) {
    fail("expected input with " + std::to_string(spatial_ + 2) + " axes (batch, spatial..., channels) or " +
         std::to_string(spatial_ + 1) + " (no batch); given shape " + shape_string(x.shape()) + ".");
  }
  if (!training() || p_ == 0.0F) {
    return x;
  }
  Shape mask_shape = x.shape();
  if (spatial_ > 0) {
    // One draw per (sample, channel): the spatial axes broadcast.
    for (int i = x.ndim() - 1 - spatial_; i < x.ndim() - 1; ++i) {
      mask_shape[i] = 1;
    }
  }
  auto keep = random::bernoulli(1.0F - p_, mask_shape);
  return x * astype(keep, x.dtype()) * detail::like(x, 1.0 / (1.0 - p_));
}

}  // namespace nuvec::nn
