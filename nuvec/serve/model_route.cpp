#include "nuvec/serve/model_route.h"

#include <charconv>
#include <set>

#include "nuvec/core/error.h"

namespace nuvec::serve {

namespace {

[[noreturn]] void bad_route(const std::string& spec, const std::string& why) {
  throw_invalid("[serve] --route " + spec + ": " + why + " (expected NAME=MODEL:WEIGHT,MODEL:WEIGHT,...).");
}

}  // namespace

RouteSpec parse_route(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    bad_route(spec, "no route name before '='");
  }
  RouteSpec route{spec.substr(0, eq), {}};
  std::set<std::string> seen;
  size_t at = eq + 1;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string part = spec.substr(at, comma - at);
    const size_t colon = part.rfind(':');
    RouteTarget target{part.substr(0, colon), 1};
    if (colon != std::string::npos) {
      const std::string weight = part.substr(colon + 1);
      const auto [end, error] = std::from_chars(weight.data(), weight.data() + weight.size(), target.weight);
      if (error != std::errc() || end != weight.data() + weight.size() || target.weight <= 0) {
        bad_route(spec, "the weight '" + weight + "' is not a positive integer");
      }
    }
    if (target.model.empty()) {
      bad_route(spec, "a target names no model");
    }
    if (!seen.insert(target.model).second) {
      bad_route(spec, "the model '" + target.model + "' is named twice");
    }
    route.targets.push_back(std::move(target));
    at = comma + 1;
  }
  return route;
}

ModelRoute::ModelRoute(std::vector<RouteTarget> targets, uint64_t seed) : targets_(std::move(targets)), engine_(seed) {
  for (const RouteTarget& target : targets_) {
    total_ += static_cast<uint64_t>(target.weight);
  }
}

const std::string& ModelRoute::pick() {
  uint64_t draw = std::uniform_int_distribution<uint64_t>(0, total_ - 1)(engine_);
  for (const RouteTarget& target : targets_) {
    if (draw < static_cast<uint64_t>(target.weight)) {
      return target.model;
    }
    draw -= static_cast<uint64_t>(target.weight);
  }
  return targets_.back().model;
}

}  // namespace nuvec::serve
