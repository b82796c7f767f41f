#pragma once

// PyTorch 1.13 (through the NumPy oracle's /usr/bin/python3) as the reference for nn: snippets get the inputs as
// NumPy arrays a, b, c, ... and the helpers T (a float64 tensor of an input) and N (a tensor back to NumPy).
// References run in float64 from the same weights and inputs, so a float32 result is compared at float32 accuracy.

#include <string>
#include <vector>

#include "nuvec/nn/nn.h"
#include "nuvec/nuvec.h"
#include "tests/support/reference.h"

namespace nuvec::test {

inline const std::string& torch_prelude() {
  static const std::string prelude =
      "import torch\n"
      "import torch.nn.functional as F\n"
      "T = lambda x: torch.tensor(np.asarray(x, dtype=np.float64))\n"
      "N = lambda t: t.detach().numpy().copy()\n";
  return prelude;
}

/// Runs statements that assign `out` (one array or a tuple) with torch imported; returns every output.
inline std::vector<HostArray> torch_run(const std::string& code, const std::vector<array>& inputs) {
  std::vector<HostArray> hosts;
  hosts.reserve(inputs.size());
  for (const auto& in : inputs) {
    hosts.push_back(to_host(in));
  }
  return numpy(torch_prelude() + code, hosts);
}

/// torch_run with a single result.
inline HostArray torch_ref(const std::string& code, const std::vector<array>& inputs) {
  auto out = torch_run(code, inputs);
  if (out.size() != 1) {
    throw std::runtime_error("torch_ref expects one result from: " + code);
  }
  return out.front();
}

/// float32 results against a float64 reference.
inline ::testing::AssertionResult close(const array& actual, const HostArray& expected, double tol = 2e-5) {
  return matches(actual, expected, tol, tol, false);
}

}  // namespace nuvec::test
