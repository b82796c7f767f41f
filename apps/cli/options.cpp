#include "apps/cli/options.h"

#include <charconv>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace nuvec::cli {

namespace {

constexpr const char* expects_number = "a number";
constexpr const char* expects_integer = "an integer";
constexpr const char* expects_count = "a non-negative integer";

/// `text` parsed whole as a T, or a message naming the option and what it expects.
template <class T>
T parse_number(const std::string& option, const std::string& text, const char* expected) {
  T value{};
  const char* end = text.data() + text.size();
  auto [stop, status] = std::from_chars(text.data(), end, value);
  if (text.empty() || status != std::errc() || stop != end) {
    throw std::invalid_argument(option + " expects " + expected + ", got '" + text + "'");
  }
  return value;
}

}  // namespace

Options& Options::value(const std::string& name, std::string expects, std::function<void(const std::string&)> set) {
  values_.insert_or_assign(name, Value{std::move(expects), std::move(set)});
  return *this;
}

Options& Options::add(const std::string& name, std::string& target) {
  return value(name, "a value", [&target](const std::string& v) { target = v; });
}

Options& Options::add(const std::string& name, std::optional<std::string>& target) {
  return value(name, "a value", [&target](const std::string& v) { target = v; });
}

Options& Options::add(const std::string& name, std::vector<std::string>& target) {
  return value(name, "a value", [&target](const std::string& v) { target.push_back(v); });
}

Options& Options::add(const std::string& name, int& target) {
  return value(name, expects_integer,
               [&target, name](const std::string& v) { target = parse_number<int>(name, v, expects_integer); });
}

Options& Options::add(const std::string& name, uint64_t& target) {
  return value(name, expects_count,
               [&target, name](const std::string& v) { target = parse_number<uint64_t>(name, v, expects_count); });
}

Options& Options::add(const std::string& name, double& target) {
  return value(name, expects_number,
               [&target, name](const std::string& v) { target = parse_number<double>(name, v, expects_number); });
}

Options& Options::add(const std::string& name, float& target) {
  return value(name, expects_number,
               [&target, name](const std::string& v) { target = parse_number<float>(name, v, expects_number); });
}

Options& Options::add(const std::string& name, std::optional<int>& target) {
  return value(name, expects_integer,
               [&target, name](const std::string& v) { target = parse_number<int>(name, v, expects_integer); });
}

Options& Options::add(const std::string& name, std::optional<uint64_t>& target) {
  return value(name, expects_count,
               [&target, name](const std::string& v) { target = parse_number<uint64_t>(name, v, expects_count); });
}

Options& Options::add(const std::string& name, std::optional<double>& target) {
  return value(name, expects_number,
               [&target, name](const std::string& v) { target = parse_number<double>(name, v, expects_number); });
}

Options& Options::add(const std::string& name, std::optional<float>& target) {
  return value(name, expects_number,
               [&target, name](const std::string& v) { target = parse_number<float>(name, v, expects_number); });
}

Options& Options::flag(const std::string& name, bool& target) {
  flags_[name] = &target;
  return *this;
}

void Options::parse(int argc, char** argv, int first) const {
  for (int i = first; i < argc; ++i) {
    std::string name = argv[i];
    if (auto found = flags_.find(name); found != flags_.end()) {
      *found->second = true;
      continue;
    }
    auto found = values_.find(name);
    if (found == values_.end()) {
      throw std::invalid_argument("unknown option " + name);
    }
    if (i + 1 >= argc) {
      throw std::invalid_argument(name + " expects " + found->second.expects + ", got nothing");
    }
    found->second.set(argv[++i]);
  }
}

std::map<std::string, std::string> Options::expected_values() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : values_) {
    out.emplace(name, v.expects);
  }
  return out;
}

}  // namespace nuvec::cli
