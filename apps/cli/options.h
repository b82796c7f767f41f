#pragma once

// The options of one `nuvec` subcommand: `--name value` pairs bound to typed variables, and `--name` switches.
// Every error names the option: "--lr expects a number, got 'abc'".

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace nuvec::cli {

class Options {
 public:
  Options& add(const std::string& name, std::string& target);
  Options& add(const std::string& name, std::optional<std::string>& target);
  /// An option that may repeat: each value is appended.
  Options& add(const std::string& name, std::vector<std::string>& target);
  Options& add(const std::string& name, int& target);
  Options& add(const std::string& name, uint64_t& target);
  Options& add(const std::string& name, double& target);
  Options& add(const std::string& name, float& target);
  /// Options that may stay unset (a default chosen later, from a model's generation config say).
  Options& add(const std::string& name, std::optional<int>& target);
  Options& add(const std::string& name, std::optional<uint64_t>& target);
  Options& add(const std::string& name, std::optional<double>& target);
  Options& add(const std::string& name, std::optional<float>& target);
  /// A switch: present sets `target` to true.
  Options& flag(const std::string& name, bool& target);

  /// Reads argv[first], argv[first + 1], ...; throws std::invalid_argument naming an unknown option, a missing
  /// value, or a value of the wrong kind.
  void parse(int argc, char** argv, int first = 2) const;

  /// Each option that takes a value, with what it expects: "a number", "an integer", "a non-negative integer" or
  /// "a value" (any text).
  [[nodiscard]] std::map<std::string, std::string> expected_values() const;

 private:
  struct Value {
    std::string expects;
    std::function<void(const std::string&)> set;
  };
  Options& value(const std::string& name, std::string expects, std::function<void(const std::string&)> set);

  std::map<std::string, Value> values_;
  std::map<std::string, bool*> flags_;
};

}  // namespace nuvec::cli
