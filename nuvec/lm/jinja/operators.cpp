#include "nuvec/lm/jinja/operators.h"

#include <cmath>
#include <cstdio>

#include "nuvec/lm/jinja/format.h"

namespace nuvec::lm::jinja {
namespace {

// Repetition beyond this many elements or bytes is a runaway template, not a prompt.
constexpr int64_t max_repeat_size = int64_t{1} << 28;

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value repeat(const Value& sequence, int64_t times) {
  times = std::max<int64_t>(times, 0);
  if (sequence.is<std::string>()) {
    const std::string& s = sequence.str();
    if (static_cast<int64_t>(s.size()) * times > max_repeat_size) {
      fail("repeated string is too long");
    }
    std::string out;
    for (int64_t i = 0; i < times; ++i) {
      out += s;
    }
    return Value(std::move(out));
  }
  const auto& list = *sequence.as<List>();
  if (static_cast<int64_t>(list.items.size()) * times > max_repeat_size) {
    fail("repeated list is too long");
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), list.items.begin(), list.items.end());
  }
  return make_list(std::move(out), list.is_tuple);
}

// Python's ints are unbounded; past 64 bits nuvec fails rather than give a wrong number.
Value checked(bool overflow, int64_t result) {
  if (overflow) {
    fail("integer overflow: the result does not fit in 64 bits");
  }
  return Value(result);
}

double python_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) {
    m += b;
  }
  return m;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) {
    --q;
  }
  return q;
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    return Value(to_str(a) + to_str(b));
  }
  if (a.is_undefined()) {
    fail_undefined(a.as<Undefined>());
  }
  if (b.is_undefined()) {
    fail_undefined(b.as<Undefined>());
  }
  bool ints = is_integer(a) && is_integer(b);
  int64_t result = 0;
  bool numbers = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) {
      bool overflow = __builtin_add_overflow(as_integer(a), as_integer(b), &result);
      return checked(overflow, result);
    }
    if (numbers) {
      return Value(to_double(a) + to_double(b));
    }
    if (a.is<std::string>() && b.is<std::string>()) {
      return Value(a.str() + b.str());
    }
    if (a.is<List>() && b.is<List>() && a.as<List>()->is_tuple == b.as<List>()->is_tuple) {
      std::vector<Value> items = a.as<List>()->items;
      const auto& more = b.as<List>()->items;
      items.insert(items.end(), more.begin(), more.end());
      return make_list(std::move(items), a.as<List>()->is_tuple);
    }
    if (a.is<std::string>() || a.is<List>()) {
      fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
    }
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      bool overflow = __builtin_mul_overflow(as_integer(a), as_integer(b), &result);
      return checked(overflow, result);
    }
    if (numbers) {
      return Value(to_double(a) * to_double(b));
    }
    if ((a.is<std::string>() || a.is<List>()) && is_integer(b)) {
      return repeat(a, as_integer(b));
    }
    if ((b.is<std::string>() || b.is<List>()) && is_integer(a)) {
      return repeat(b, as_integer(a));
    }
    unsupported(op, a, b);
  }
  if (op == "%" && a.is<std::string>()) {
    if (b.is<List>() && b.as<List>()->is_tuple) {
      return Value(percent_format(a.str(), b.as<List>()->items));
    }
    return Value(percent_format(a.str(), {b}));
  }
  if (!numbers) {
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      bool overflow = __builtin_sub_overflow(as_integer(a), as_integer(b), &result);
      return checked(overflow, result);
    }
    return Value(to_double(a) - to_double(b));
  }
  if (op == "/") {
    if (to_double(b) == 0) {
      fail("division by zero");
    }
    return Value(to_double(a) / to_double(b));
  }
  if (op == "//") {
    if (to_double(b) == 0) {
      fail(ints ? "integer division or modulo by zero" : "float floor division by zero");
    }
    if (ints) {
      return Value(floor_div(as_integer(a), as_integer(b)));
    }
    return Value(std::floor(to_double(a) / to_double(b)));
  }
  if (op == "%") {
    if (to_double(b) == 0) {
      fail(ints ? "integer modulo by zero" : "float modulo");
    }
    if (ints) {
      return Value(as_integer(a) - floor_div(as_integer(a), as_integer(b)) * as_integer(b));
    }
    return Value(python_fmod(to_double(a), to_double(b)));
  }
  if (op == "**") {
    if (ints && as_integer(b) >= 0) {
      result = 1;
      bool overflow = false;
      for (int64_t base = as_integer(a), e = as_integer(b); e > 0 && !overflow; e >>= 1) {
        if ((e & 1) != 0) {
          overflow = __builtin_mul_overflow(result, base, &result);
        }
        if (e > 1) {
          overflow = overflow || __builtin_mul_overflow(base, base, &base);
        }
      }
      return checked(overflow, result);
    }
    if (to_double(a) == 0 && to_double(b) < 0) {
      fail("0.0 cannot be raised to a negative power");
    }
    return Value(std::pow(to_double(a), to_double(b)));
  }
  fail("unknown operator " + op);
}

Value unary_op(const std::string& op, const Value& a) {
  if (a.is_undefined()) {
    fail_undefined(a.as<Undefined>());
  }
  if (!a.is_number()) {
    fail("bad operand type for unary " + op + ": '" + type_name(a) + "'");
  }
  if (op == "+") {
    return is_integer(a) ? Value(as_integer(a)) : a;
  }
  return is_integer(a) ? Value(-as_integer(a)) : Value(-a.as<double>());
}

bool contains(const Value& container, const Value& item) {
  if (container.is<std::string>()) {
    if (!item.is<std::string>()) {
      fail("'in <string>' requires string as left operand, not " + type_name(item));
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is<Dict>()) {
    if (item.is<Dict>() || (item.is<List>() && !item.as<List>()->is_tuple)) {
      fail("unhashable type: '" + type_name(item) + "'");
    }
    return container.as<Dict>()->find(item) != nullptr;
  }
  if (container.is<List>() || container.is_undefined()) {
    for (const Value& v : iterate(container)) {
      if (equal(v, item)) {
        return true;
      }
    }
    return false;
  }
  fail("argument of type '" + type_name(container) + "' is not iterable");
}

Value slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  // Jinja2 compiles a slice to Python's own obj[a:b:c], so its errors are Python's.
  bool is_string = object.is<std::string>();
  if (object.is<Dict>()) {
    fail("unhashable type: 'slice'");
  }
  if (!is_string && !object.is<List>()) {
    fail("'" + type_name(object) + "' object is not subscriptable");
  }
  for (const Value* bound : {&start, &stop, &step}) {
    if (!bound->is_none() && !is_integer(*bound)) {
      fail("slice indices must be integers or None or have an __index__ method");
    }
  }
  int64_t first = start.is_none() ? 0 : as_integer(start);
  int64_t last = stop.is_none() ? 0 : as_integer(stop);
  int64_t stride = step.is_none() ? 1 : as_integer(step);
  bool has_start = !start.is_none(), has_stop = !stop.is_none();
  if (stride == 0) {
    fail("slice step cannot be zero");
  }

  std::u32string chars = is_string ? to_code_points(object.str()) : std::u32string();
  int64_t n = is_string ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(object.as<List>()->items.size());
  auto clamp = [&](int64_t i, bool given, int64_t fallback) {
    if (!given) {
      return fallback;
    }
    if (i < 0) {
      i += n;
    }
    if (stride > 0) {
      return std::clamp<int64_t>(i, 0, n);
    }
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  first = clamp(first, has_start, stride > 0 ? 0 : n - 1);
  last = clamp(last, has_stop, stride > 0 ? n : -1);
  std::vector<size_t> picks;
  for (int64_t i = first; stride > 0 ? i < last : i > last; i += stride) {
    picks.push_back(static_cast<size_t>(i));
  }
  if (is_string) {
    std::u32string out;
    for (size_t i : picks) {
      out += chars[i];
    }
    return Value(from_code_points(out));
  }
  std::vector<Value> out;
  out.reserve(picks.size());
  for (size_t i : picks) {
    out.push_back(object.as<List>()->items[i]);
  }
  return make_list(std::move(out), object.as<List>()->is_tuple);
}

std::string percent_format(const std::string& format, const std::vector<Value>& args) {
  std::string out;
  size_t next_arg = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < format.size() && (std::string_view("-+ #0").find(format[j]) != std::string_view::npos)) {
      spec += format[j++];
    }
    while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j])) != 0) {
      spec += format[j++];
    }
    if (j < format.size() && format[j] == '.') {
      spec += format[j++];
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j])) != 0) {
        spec += format[j++];
      }
    }
    if (j >= format.size()) {
      fail("incomplete format");
    }
    char type = format[j];
    i = j;
    if (type == '%') {
      out += '%';
      continue;
    }
    if (next_arg >= args.size()) {
      fail("not enough arguments for format string");
    }
    const Value& arg = args[next_arg++];
    char buffer[512];
    if (type == 's' || type == 'r') {
      std::string text = type == 's' ? to_str(arg) : to_repr(arg);
      std::snprintf(buffer, sizeof buffer, (spec + "s").c_str(), text.c_str());
      out += text.size() < 256 ? std::string(buffer) : text;
    } else if ((std::string_view("dixXo").find(type) != std::string_view::npos)) {
      if (!arg.is_number()) {
        fail(std::string("%") + type + " format: a real number is required, not " + type_name(arg));
      }
      auto n = is_integer(arg) ? static_cast<long long>(as_integer(arg))
                               : static_cast<long long>(truncate_to_integer(to_double(arg)));
      char conversion = type == 'i' ? 'd' : type;
      std::snprintf(buffer, sizeof buffer, (spec + "ll" + conversion).c_str(), n);
      out += buffer;
    } else if ((std::string_view("eEfFgG").find(type) != std::string_view::npos)) {
      if (!arg.is_number()) {
        fail("must be real number, not " + type_name(arg));
      }
      std::snprintf(buffer, sizeof buffer, (spec + type).c_str(), to_double(arg));
      out += buffer;
    } else {
      fail(std::string("unsupported format character '") + type + "'");
    }
  }
  if (next_arg < args.size()) {
    fail("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace nuvec::lm::jinja
