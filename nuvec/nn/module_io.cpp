// Module and optimizer weights as safetensors files, through the io library: names as parameters() (PyTorch and
// Hugging Face state-dict names), tensors in their own dtypes.

#include <map>
#include <unordered_map>

#include "nuvec/io/safetensors.h"
#include "nuvec/nn/module.h"
#include "nuvec/nn/optimizers.h"

namespace nuvec {

namespace {

std::unordered_map<std::string, array> to_map(const nn::Params& params) {
  std::unordered_map<std::string, array> out;
  for (const auto& [name, value] : params) {
    out.insert_or_assign(name, value);
  }
  return out;
}

/// The file's tensors in name order (a stable order for messages and reports).
nn::Params read_params(const std::string& file) {
  auto [tensors, metadata] = load_safetensors(file);
  std::map<std::string, array> sorted(tensors.begin(), tensors.end());
  return {sorted.begin(), sorted.end()};
}

}  // namespace

void nn::Module::save_weights(const std::string& file) const { save_safetensors(file, to_map(parameters())); }

nn::LoadReport nn::Module::load_weights(const std::string& file, bool strict) {
  return load_weights(read_params(file), strict);
}

void optimizers::Optimizer::save_state(const std::string& file) const { save_safetensors(file, to_map(state())); }

void optimizers::Optimizer::load_state(const std::string& file) { set_state(read_params(file)); }

}  // namespace nuvec
