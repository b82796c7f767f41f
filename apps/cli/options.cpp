#include "apps/cli/options.h"

#include <charconv>
#include <stdexcept>
#include <system_error>

namespace nuvec::cli {

namespace {

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

Options& Options::add(const std::string& name, std::string& target) {
  values_[name] = [&target](const std::string& v) { target = v; };
  return *this;
}

Options& Options::add(const std::string& name, std::optional<std::string>& target) {
  values_[name] = [&target](const std::string& v) { target = v; };
  return *this;
}

Options& Options::add(const std::string& name, int& target) {
  values_[name] = [&target, name](const std::string& v) { target = parse_number<int>(name, v, "an integer"); };
  return *this;
}

Options& Options::add(const std::string& name, uint64_t& target) {
  values_[name] = [&target, name](const std::string& v) {
    target = parse_number<uint64_t>(name, v, "a non-negative integer");
  };
  return *this;
}

Options& Options::add(const std::string& name, double& target) {
  values_[name] = [&target, name](const std::string& v) { target = parse_number<double>(name, v, "a number"); };
  return *this;
}

Options& Options::add(const std::string& name, float& target) {
  values_[name] = [&target, name](const std::string& v) { target = parse_number<float>(name, v, "a number"); };
  return *this;
}

Options& Options::add(const std::string& name, std::optional<int>& target) {
  values_[name] = [&target, name](const std::string& v) { target = parse_number<int>(name, v, "an integer"); };
  return *this;
}

Options& Options::add(const std::string& name, std::optional<uint64_t>& target) {
  values_[name] = [&target, name](const std::string& v) {
    target = parse_number<uint64_t>(name, v, "a non-negative integer");
  };
  return *this;
}

Options& Options::add(const std::string& name, std::optional<float>& target) {
  values_[name] = [&target, name](const std::string& v) { target = parse_number<float>(name, v, "a number"); };
  return *this;
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
      throw std::invalid_argument("option " + name + " needs a value");
    }
    found->second(argv[++i]);
  }
}

}  // namespace nuvec::cli
