#pragma once

// A route: a model name that several served models answer for, each taking a share of the requests by weight
// (`--route NAME=A:90,B:10` for A/B tests of two versions). Each request's model is drawn on its own, from a
// seeded engine so that tests can repeat the draws.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace nuvec::serve {

/// A share of a route's requests: the served model that answers them and its weight.
struct RouteTarget {
  std::string model;
  int weight = 0;
};

struct RouteSpec {
  std::string name;
  std::vector<RouteTarget> targets;
};

/// Reads "NAME=A:90,B:10" (weights positive integers; a target without ":W" weighs 1); throws an invalid-argument
/// error naming what is wrong.
RouteSpec parse_route(const std::string& spec);

class ModelRoute {
 public:
  /// `targets` must be non-empty with positive weights.
  ModelRoute(std::vector<RouteTarget> targets, uint64_t seed);

  /// The model of the next request: target i with probability weight_i / total. Not thread-safe.
  const std::string& pick();
  [[nodiscard]] const std::vector<RouteTarget>& targets() const { return targets_; }

 private:
  std::vector<RouteTarget> targets_;
  uint64_t total_ = 0;
  std::mt19937_64 engine_;
};

}  // namespace nuvec::serve
