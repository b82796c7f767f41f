#include "nuvec/lm/models/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "nuvec/core/error.h"
#include "nuvec/core/fast.h"
#include "nuvec/core/ops.h"
#include "nuvec/lm/models/config.h"

namespace nuvec::lm {

namespace {

constexpr const char* supported_types = "default, linear, dynamic, llama3, yarn, longrope (su)";

/// A rope_scaling number: required when `fallback` is none.
double scaling_number(const nlohmann::json& scaling, const std::string& key, std::optional<double> fallback = {}) {
  auto it = scaling.find(key);
  if (it == scaling.end() || it->is_null()) {
    if (!fallback) {
      throw_invalid("[config.json] rope_scaling." + key + " is missing (rope_scaling " + scaling.dump() + ").");
    }
    return *fallback;
  }
  if (!it->is_number()) {
    throw_invalid("[config.json] rope_scaling." + key + " must be a number; got " + it->dump() + ".");
  }
  return it->get<double>();
}

/// A list of dims / 2 per-frequency factors (longrope's short_factor and long_factor).
std::vector<double> scaling_factors(const nlohmann::json& scaling, const std::string& key, int dims) {
  auto it = scaling.find(key);
  if (it == scaling.end() || !it->is_array() || static_cast<int>(it->size()) != dims / 2 ||
      !std::all_of(it->begin(), it->end(), [](const nlohmann::json& v) { return v.is_number(); })) {
    throw_invalid("[config.json] rope_scaling." + key + " must list " + std::to_string(dims / 2) +
                  " numbers (one per rotated pair of features).");
  }
  return it->get<std::vector<double>>();
}

/// base^(2i / dims) for i in [0, dims / 2): the period of each rotated pair before scaling.
std::vector<double> base_periods(int dims, double base) {
  std::vector<double> periods(dims / 2);
  for (int i = 0; i < dims / 2; ++i) {
    periods[i] = std::pow(base, 2.0 * i / dims);
  }
  return periods;
}

array as_array(const std::vector<double>& values) {
  std::vector<float> narrowed(values.begin(), values.end());
  return array(narrowed.begin(), {static_cast<int>(narrowed.size())}, float32);
}

/// The context length the scaling extends from: rope_scaling's original_max_position_embeddings, else the model's.
int original_context(const nlohmann::json& scaling, int max_position_embeddings) {
  const double original = scaling_number(scaling, "original_max_position_embeddings", max_position_embeddings);
  if (original <= 0) {
    throw_invalid("[config.json] rope_scaling " + scaling.dump() +
                  " needs original_max_position_embeddings or max_position_embeddings.");
  }
  return static_cast<int>(original);
}

/// Llama 3.1: long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
RopeFrequencies llama3_frequencies(int dims, double theta, const nlohmann::json& scaling) {
  const double factor = scaling_number(scaling, "factor");
  const double low_freq_factor = scaling_number(scaling, "low_freq_factor", 1.0);
  const double high_freq_factor = scaling_number(scaling, "high_freq_factor", 4.0);
  const double original = scaling_number(scaling, "original_max_position_embeddings", 8192.0);
  const double low_freq_wavelen = original / low_freq_factor;
  const double high_freq_wavelen = original / high_freq_factor;
  std::vector<double> periods = base_periods(dims, theta);
  for (double& period : periods) {
    const double wavelen = 2 * std::numbers::pi * period;
    if (wavelen > low_freq_wavelen) {
      period *= factor;
    } else if (wavelen > high_freq_wavelen) {
      const double smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      period /= (1 - smooth) / factor + smooth;
    }
  }
  return {std::nullopt, as_array(periods), 1.0F, 1.0F};
}

double yarn_mscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

/// YaRN: interpolated (slowed by `factor`) low frequencies, extrapolated high ones, a linear ramp between over
/// the dimensions that complete between beta_slow and beta_fast turns in the original context, and an attention
/// scaling on the rotated features.
RopeFrequencies yarn_frequencies(int dims, double theta, const nlohmann::json& scaling, int max_position_embeddings) {
  const double factor = scaling_number(scaling, "factor");
  const double beta_fast = scaling_number(scaling, "beta_fast", 32.0);
  const double beta_slow = scaling_number(scaling, "beta_slow", 1.0);
  const double original = original_context(scaling, max_position_embeddings);
  auto correction_dim = [&](double rotations) {
    return dims * std::log(original / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
  };
  const bool truncate = config_field::boolean(scaling, "truncate", true);
  double low = correction_dim(beta_fast);
  double high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dims - 1.0);
  if (low == high) {
    high += 0.001;
  }
  std::vector<double> periods = base_periods(dims, theta);
  for (int i = 0; i < dims / 2; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;
    const double inverse = extrapolation / periods[i] + (1 - extrapolation) / (factor * periods[i]);
    periods[i] = 1.0 / inverse;
  }
  double magnitude = 0;
  if (auto given = scaling.find("attention_factor"); given != scaling.end() && !given->is_null()) {
    magnitude = scaling_number(scaling, "attention_factor");
  } else if (scaling.contains("mscale") && scaling.contains("mscale_all_dim")) {
    magnitude = yarn_mscale(factor, scaling_number(scaling, "mscale")) /
                yarn_mscale(factor, scaling_number(scaling, "mscale_all_dim"));
  } else {
    magnitude = yarn_mscale(factor, 1.0);
  }
  return {std::nullopt, as_array(periods), 1.0F, static_cast<float>(magnitude)};
}

/// Dynamic NTK: past the trained context, a larger base stretches every period with the sequence's length.
RoPE::Schedule dynamic_schedule(int dims, double theta, const nlohmann::json& scaling, int max_position_embeddings) {
  const double factor = scaling_number(scaling, "factor");
  const int original = original_context(scaling, max_position_embeddings);
  return [=](int total_length) {
    if (total_length <= original) {
      return RopeFrequencies{static_cast<float>(theta), std::nullopt, 1.0F, 1.0F};
    }
    const double stretch = factor * total_length / original - (factor - 1);
    const double base = theta * std::pow(stretch, static_cast<double>(dims) / (dims - 2));
    return RopeFrequencies{static_cast<float>(base), std::nullopt, 1.0F, 1.0F};
  };
}

/// LongRoPE (phi3): per-frequency factors, the long ones once the sequence passes the original context, and an
/// attention scaling that grows with the context extension.
RoPE::Schedule longrope_schedule(int dims, double theta, const nlohmann::json& scaling, int max_position_embeddings,
                                 std::optional<int> original_context_length) {
  const std::vector<double> short_factor = scaling_factors(scaling, "short_factor", dims);
  const std::vector<double> long_factor = scaling_factors(scaling, "long_factor", dims);
  // With an original context the factor is the extension over it (as transformers computes it).
  const int original = original_context_length.value_or(max_position_embeddings);
  const double factor = original_context_length && max_position_embeddings > 0
                            ? static_cast<double>(max_position_embeddings) / original
                            : scaling_number(scaling, "factor", 1.0);
  double magnitude = factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(original)));
  magnitude = scaling_number(scaling, "attention_factor", magnitude);
  const std::vector<double> periods = base_periods(dims, theta);
  auto scaled = [&](const std::vector<double>& factors) {
    std::vector<double> out(periods.size());
    for (size_t i = 0; i < periods.size(); ++i) {
      out[i] = periods[i] * factors[i];
    }
    return RopeFrequencies{std::nullopt, as_array(out), 1.0F, static_cast<float>(magnitude)};
  };
  RopeFrequencies short_frequencies = scaled(short_factor);
  RopeFrequencies long_frequencies = scaled(long_factor);
  return [=](int total_length) { return total_length > original ? long_frequencies : short_frequencies; };
}

/// x with its first `dims` features multiplied by `magnitude`, in x's dtype.
array scale_rotated(const array& x, int dims, float magnitude) {
  if (magnitude == 1.0F) {
    return x;
  }
  const array factor(magnitude, x.dtype());
  if (dims == x.shape(-1)) {
    return x * factor;
  }
  auto parts = split(x, Shape{dims}, -1);
  return concatenate({parts[0] * factor, parts[1]}, -1);
}

}  // namespace

RoPE::RoPE(int dims, bool traditional, RopeFrequencies frequencies)
    : dims_(dims), traditional_(traditional), fixed_(std::move(frequencies)) {}

RoPE::RoPE(int dims, bool traditional, Schedule schedule)
    : dims_(dims), traditional_(traditional), schedule_(std::move(schedule)) {}

array RoPE::operator()(const array& x, int offset) const {
  const RopeFrequencies f = fixed_ ? *fixed_ : schedule_(offset + x.shape(-2));
  return fast::rope(scale_rotated(x, dims_, f.magnitude), dims_, traditional_, f.base, f.position_scale, offset,
                    f.periods);
}

array RoPE::operator()(const array& x, const array& offsets) const {
  // Only length-dependent frequencies need the offsets' values; the batch shares the furthest sequence's choice.
  const RopeFrequencies f = fixed_ ? *fixed_ : schedule_(max(offsets, false).item<int>() + x.shape(-2));
  return fast::rope(scale_rotated(x, dims_, f.magnitude), dims_, traditional_, f.base, f.position_scale, offsets,
                    f.periods);
}

array RoPE::operator()(const array& x, const KVCache* cache) const {
  if (cache == nullptr) {
    return (*this)(x, 0);
  }
  if (auto offsets = cache->batch_offsets()) {
    return (*this)(x, *offsets);
  }
  return (*this)(x, cache->offset());
}

std::shared_ptr<const RoPE> make_rope(int dims, float theta, const nlohmann::json& rope_scaling,
                                      int max_position_embeddings, bool traditional) {
  if (rope_scaling.is_null()) {
    return std::make_shared<RoPE>(dims, traditional, RopeFrequencies{theta, std::nullopt, 1.0F, 1.0F});
  }
  if (!rope_scaling.is_object()) {
    throw_invalid("[config.json] rope_scaling must be an object or null; got " + rope_scaling.dump() + ".");
  }
  const std::string type =
      config_field::string(rope_scaling, "rope_type", config_field::string(rope_scaling, "type", "default"));
  if (type == "default") {
    return std::make_shared<RoPE>(dims, traditional, RopeFrequencies{theta, std::nullopt, 1.0F, 1.0F});
  }
  if (type == "linear") {
    const auto factor = static_cast<float>(scaling_number(rope_scaling, "factor"));
    return std::make_shared<RoPE>(dims, traditional, RopeFrequencies{theta, std::nullopt, 1.0F / factor, 1.0F});
  }
  if (type == "dynamic") {
    return std::make_shared<RoPE>(dims, traditional,
                                  dynamic_schedule(dims, theta, rope_scaling, max_position_embeddings));
  }
  if (type == "llama3") {
    return std::make_shared<RoPE>(dims, traditional, llama3_frequencies(dims, theta, rope_scaling));
  }
  if (type == "yarn") {
    return std::make_shared<RoPE>(dims, traditional,
                                  yarn_frequencies(dims, theta, rope_scaling, max_position_embeddings));
  }
  if (type == "longrope" || type == "su") {
    std::optional<int> original;
    if (rope_scaling.contains("original_max_position_embeddings")) {
      original = static_cast<int>(scaling_number(rope_scaling, "original_max_position_embeddings"));
    }
    return std::make_shared<RoPE>(dims, traditional,
                                  longrope_schedule(dims, theta, rope_scaling, max_position_embeddings, original));
  }
  throw_invalid("[config.json] unknown rope_scaling type '" + type + "'; supported: " + supported_types + ".");
}

}  // namespace nuvec::lm
