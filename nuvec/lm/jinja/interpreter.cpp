#include "nuvec/lm/jinja/interpreter.h"

#include <cstdlib>
#include <ctime>
#include <new>
#include <optional>
#include <unordered_map>

#include "nuvec/core/error.h"
#include "nuvec/lm/jinja/builtins.h"
#include "nuvec/lm/jinja/format.h"
#include "nuvec/lm/jinja/operators.h"

namespace nuvec::lm::jinja {
namespace {

// Jinja2's sandbox caps range() here; the macro depth cap stands in for Python's recursion limit.
constexpr int64_t max_range = 100000;
constexpr int max_call_depth = 200;
constexpr size_t max_output = size_t{1} << 28;

/// Variables of one frame; look-ups fall through to the enclosing frames.
struct Scope {
  std::unordered_map<std::string, Value> variables;
  std::shared_ptr<Scope> parent;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->variables.find(name);
      if (it != s->variables.end()) {
        return &it->second;
      }
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child_scope(ScopePtr parent) {
  auto scope = std::make_shared<Scope>();
  scope->parent = std::move(parent);
  return scope;
}

enum class Flow { normal, break_loop, continue_loop };

class Interpreter {
 public:
  explicit Interpreter(ScopePtr globals) : scope_(std::move(globals)) {}

  std::string run(const Body& body) {
    try {
      exec(body);
    } catch (const RenderError& e) {
      throw_error(ErrorKind::invalid_argument,
                  "chat template error at line " + std::to_string(line_) + ": " + e.message);
    } catch (const std::bad_alloc&) {
      throw_error(ErrorKind::out_of_memory, "chat template error at line " + std::to_string(line_) + ": out of memory");
    }
    return std::move(out_);
  }

 private:
  // ---- statements ----

  Flow exec(const Body& body) {
    for (const Stmt& stmt : body) {
      line_ = stmt.line;
      Flow flow = std::visit([&](const auto& node) { return exec_node(node); }, stmt.node);
      if (flow != Flow::normal) {
        return flow;
      }
    }
    return Flow::normal;
  }

  Flow exec_node(const ast::Text& node) {
    emit(node.text);
    return Flow::normal;
  }

  Flow exec_node(const ast::Output& node) {
    emit(to_str(eval(*node.value)));
    return Flow::normal;
  }

  Flow exec_node(const ast::If& node) {
    for (const auto& [condition, body] : node.branches) {
      if (truthy(eval(*condition))) {
        return exec(body);
      }
    }
    return exec(node.otherwise);
  }

  Flow exec_node(const ast::For& node) {
    run_loop(node, eval(*node.iterable), 0);
    return Flow::normal;
  }

  // One run of a for loop over `iterable`; a recursive loop's `loop(items)` runs it again one level deeper.
  void run_loop(const ast::For& node, const Value& iterable, int depth) {
    std::vector<Value> items = iterate(iterable);
    ScopePtr outer = scope_;
    if (node.condition) {
      std::vector<Value> kept;
      for (Value& item : items) {
        ScopeGuard guard(*this, child_scope(outer));
        assign(node.target, item);
        if (truthy(eval(*node.condition))) {
          kept.push_back(std::move(item));
        }
      }
      items = std::move(kept);
    }
    auto last_changed = std::make_shared<std::optional<Value>>();
    for (size_t i = 0; i < items.size(); ++i) {
      ScopeGuard guard(*this, child_scope(outer));
      assign(node.target, items[i]);
      scope_->variables["loop"] = loop_object(node, items, i, depth, outer, last_changed);
      if (exec(node.body) == Flow::break_loop) {
        break;
      }
    }
    if (items.empty()) {
      ScopeGuard guard(*this, child_scope(outer));
      exec(node.otherwise);
    }
  }

  Flow exec_node(const ast::Set& node) {
    assign(node.target, eval(*node.value));
    return Flow::normal;
  }

  Flow exec_node(const ast::SetBlock& node) {
    Value value(capture(node.body, scope_));
    for (const FilterCall& f : node.filters) {
      value = apply(f, value);
    }
    scope_->variables[node.name] = std::move(value);
    return Flow::normal;
  }

  Flow exec_node(const ast::Macro& node) {
    scope_->variables[node.name] = make_macro(node.name, node.parameters, node.body, scope_);
    return Flow::normal;
  }

  Flow exec_node(const ast::CallBlock& node) {
    const auto& call = std::get<ast::Call>(node.call->node);
    Value callee = eval(*call.callee);
    Arguments args = eval_args(call.args);
    args.keyword.emplace_back("caller", make_macro("caller", node.caller_parameters, node.body, scope_));
    emit(to_str(invoke(callee, args)));
    return Flow::normal;
  }

  Flow exec_node(const ast::FilterBlock& node) {
    Value value(capture(node.body, child_scope(scope_)));
    for (const FilterCall& f : node.filters) {
      value = apply(f, value);
    }
    emit(to_str(value));
    return Flow::normal;
  }

  Flow exec_node(const ast::With& node) {
    auto scope = child_scope(scope_);
    for (const auto& [name, expr] : node.assignments) {
      scope->variables[name] = eval(*expr);
    }
    ScopeGuard guard(*this, std::move(scope));
    return exec(node.body);
  }

  Flow exec_node(const ast::Break&) { return Flow::break_loop; }
  Flow exec_node(const ast::Continue&) { return Flow::continue_loop; }

  // ---- expressions ----

  Value eval(const Expr& expr) {
    line_ = expr.line;
    return std::visit([&](const auto& node) { return eval_node(node, expr.line); }, expr.node);
  }

  Value eval_node(const ast::Literal& node, int) { return node.value; }

  Value eval_node(const ast::Name& node, int) {
    if (const Value* v = scope_->find(node.name)) {
      return *v;
    }
    return Value(Undefined{"'" + node.name + "' is undefined"});
  }

  Value eval_node(const ast::ListLiteral& node, int) {
    std::vector<Value> items;
    for (const ExprPtr& e : node.items) {
      items.push_back(eval(*e));
    }
    return make_list(std::move(items), node.is_tuple);
  }

  Value eval_node(const ast::DictLiteral& node, int) {
    Value dict = make_dict();
    for (const auto& [k, v] : node.items) {
      Value key = eval(*k);
      if (key.is<List>() && !key.as<List>()->is_tuple) {
        fail("unhashable type: 'list'");
      }
      if (key.is<Dict>()) {
        fail("unhashable type: 'dict'");
      }
      dict.as<Dict>()->set(key, eval(*v));
    }
    return dict;
  }

  Value eval_node(const ast::GetAttr& node, int line) {
    Value object = eval(*node.object);
    line_ = line;
    return get_attribute(object, node.name);
  }

  Value eval_node(const ast::GetItem& node, int line) {
    Value object = eval(*node.object);
    Value key = eval(*node.key);
    line_ = line;
    return get_item(object, key);
  }

  Value eval_node(const ast::Slice& node, int line) {
    Value object = eval(*node.object);
    auto bound = [&](const ExprPtr& e) { return e ? eval(*e) : Value(None{}); };
    Value start = bound(node.start), stop = bound(node.stop), step = bound(node.step);
    line_ = line;
    if (object.is_undefined()) {
      fail_undefined(object.as<Undefined>());
    }
    return slice(object, start, stop, step);
  }

  Value eval_node(const ast::Call& node, int line) {
    Value callee = eval(*node.callee);
    Arguments args = eval_args(node.args);
    line_ = line;
    return invoke(callee, args);
  }

  Value eval_node(const ast::Filter& node, int) { return apply(node.filter, eval(*node.input)); }

  Value eval_node(const ast::Test& node, int line) {
    Value input = eval(*node.input);
    Arguments args = eval_args(node.args);
    line_ = line;
    bool result = apply_test(node.name, input, args);
    return Value(node.negated ? !result : result);
  }

  Value eval_node(const ast::Unary& node, int line) {
    Value operand = eval(*node.operand);
    line_ = line;
    if (node.op == "not") {
      return Value(!truthy(operand));
    }
    return unary_op(node.op, operand);
  }

  Value eval_node(const ast::Binary& node, int line) {
    Value left = eval(*node.left);
    if (node.op == "and") {
      return truthy(left) ? eval(*node.right) : left;
    }
    if (node.op == "or") {
      return truthy(left) ? left : eval(*node.right);
    }
    Value right = eval(*node.right);
    line_ = line;
    return binary_op(node.op, left, right);
  }

  Value eval_node(const ast::Compare& node, int line) {
    Value left = eval(*node.first);
    for (const auto& [op, expr] : node.rest) {
      Value right = eval(*expr);
      line_ = line;
      bool holds = op == "=="   ? equal(left, right)
                   : op == "!=" ? !equal(left, right)
                   : op == "<"  ? less(left, right)
                   : op == ">"  ? less(right, left)
                   : op == "<=" ? !less(right, left)
                   : op == ">=" ? !less(left, right)
                   : op == "in" ? contains(right, left)
                                : !contains(right, left);
      if (!holds) {
        return Value(false);
      }
      left = std::move(right);
    }
    return Value(true);
  }

  Value eval_node(const ast::Conditional& node, int line) {
    if (truthy(eval(*node.condition))) {
      return eval(*node.then);
    }
    if (node.otherwise) {
      return eval(*node.otherwise);
    }
    return Value(Undefined{"the inline if-expression on line " + std::to_string(line) +
                           " evaluated to false and no else section was defined."});
  }

  // ---- helpers ----

  /// Restores the current scope when a block's frame ends.
  struct ScopeGuard {
    ScopeGuard(Interpreter& in, ScopePtr scope) : in_(in), saved_(std::move(in.scope_)) {
      in.scope_ = std::move(scope);
    }
    ~ScopeGuard() { in_.scope_ = std::move(saved_); }
    ScopeGuard(const ScopeGuard&) = delete;
    ScopeGuard& operator=(const ScopeGuard&) = delete;
    Interpreter& in_;
    ScopePtr saved_;
  };

  void emit(const std::string& text) {
    if (out_.size() + text.size() > max_output) {
      fail("rendered text is too long");
    }
    out_ += text;
  }

  std::string capture(const Body& body, ScopePtr scope) {
    std::string saved = std::move(out_);
    out_.clear();
    {
      ScopeGuard guard(*this, std::move(scope));
      exec(body);
    }
    std::string captured = std::move(out_);
    out_ = std::move(saved);
    return captured;
  }

  Arguments eval_args(const ArgExprs& exprs) {
    Arguments args;
    for (const ExprPtr& e : exprs.positional) {
      args.positional.push_back(eval(*e));
    }
    for (const auto& [name, e] : exprs.keyword) {
      args.keyword.emplace_back(name, eval(*e));
    }
    return args;
  }

  Value apply(const FilterCall& filter, const Value& input) {
    Arguments args = eval_args(filter.args);
    return apply_filter(filter.name, input, args);
  }

  Value invoke(const Value& callee, Arguments& args) {
    if (callee.is_undefined()) {
      fail_undefined(callee.as<Undefined>());
    }
    if (!callee.is<std::shared_ptr<Callable>>()) {
      fail("'" + type_name(callee) + "' object is not callable");
    }
    if (++depth_ > max_call_depth) {
      fail("maximum recursion depth exceeded");
    }
    struct DepthGuard {
      int& depth;
      ~DepthGuard() { --depth; }
    } depth_guard{depth_};
    int line = line_;
    Value result = callee.as<std::shared_ptr<Callable>>()->call(args);
    line_ = line;
    return result;
  }

  void assign(const Target& target, Value value) {
    if (!target.attribute.empty()) {
      const Value* object = scope_->find(target.names[0]);
      if (!object || !object->is<std::shared_ptr<Namespace>>()) {
        fail("cannot assign attribute on non-namespace object");
      }
      object->as<std::shared_ptr<Namespace>>()->attributes.set(Value(target.attribute), std::move(value));
      return;
    }
    if (target.names.size() == 1) {
      scope_->variables[target.names[0]] = std::move(value);
      return;
    }
    std::vector<Value> parts = iterate(value);
    if (parts.size() != target.names.size()) {
      fail(parts.size() > target.names.size()
               ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
               : "not enough values to unpack (expected " + std::to_string(target.names.size()) + ", got " +
                     std::to_string(parts.size()) + ")");
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      scope_->variables[target.names[i]] = std::move(parts[i]);
    }
  }

  Value loop_object(const ast::For& node, const std::vector<Value>& items, size_t i, int depth, const ScopePtr& outer,
                    const std::shared_ptr<std::optional<Value>>& last_changed) {
    auto length = static_cast<int64_t>(items.size());
    auto index = static_cast<int64_t>(i);
    auto d = std::make_shared<DictData>();
    d->set(Value("index"), Value(index + 1));
    d->set(Value("index0"), Value(index));
    d->set(Value("revindex"), Value(length - index));
    d->set(Value("revindex0"), Value(length - index - 1));
    d->set(Value("first"), Value(i == 0));
    d->set(Value("last"), Value(index == length - 1));
    d->set(Value("length"), Value(length));
    d->set(Value("depth"), Value(depth + 1));
    d->set(Value("depth0"), Value(depth));
    d->set(Value("previtem"), i > 0 ? items[i - 1] : Value(Undefined{"there is no previous item"}));
    d->set(Value("nextitem"), i + 1 < items.size() ? items[i + 1] : Value(Undefined{"there is no next item"}));
    d->set(Value("cycle"), make_callable("cycle", [i](Arguments& args) {
             if (args.positional.empty()) {
               fail("no items for cycling given");
             }
             return args.positional[i % args.positional.size()];
           }));
    d->set(Value("changed"), make_callable("changed", [last_changed](Arguments& args) {
             Value current = make_list(args.positional, true);
             bool changed = !*last_changed || !equal(**last_changed, current);
             *last_changed = current;
             return Value(changed);
           }));
    Value loop = make_callable("loop", [this, &node, depth, outer](Arguments& args) -> Value {
      if (!node.recursive) {
        fail("The loop must have the 'recursive' marker to be called recursively.");
      }
      if (args.positional.size() != 1) {
        fail("loop() takes one iterable");
      }
      std::string saved = std::move(out_);
      out_.clear();
      {
        ScopeGuard guard(*this, outer);
        run_loop(node, args.positional[0], depth + 1);
      }
      return Value(std::exchange(out_, std::move(saved)));
    });
    loop.as<std::shared_ptr<Callable>>()->attributes = std::move(d);
    return loop;
  }

  Value make_macro(const std::string& name, const std::vector<ast::Parameter>& parameters, const Body& body,
                   const ScopePtr& defined_in) {
    return make_callable(name, [this, &parameters, &body, defined_in](Arguments& args) {
      auto scope = child_scope(defined_in);
      std::vector<Value> extra;
      for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < parameters.size()) {
          scope->variables[parameters[i].name] = args.positional[i];
        } else {
          extra.push_back(args.positional[i]);
        }
      }
      Value kwargs = make_dict();
      for (auto& [key, value] : args.keyword) {
        bool is_parameter = false;
        for (const auto& p : parameters) {
          is_parameter = is_parameter || p.name == key;
        }
        if (is_parameter || key == "caller") {
          scope->variables[key] = value;
        } else {
          kwargs.as<Dict>()->set(Value(key), value);
        }
      }
      scope->variables["varargs"] = make_list(std::move(extra), true);
      scope->variables["kwargs"] = kwargs;
      for (const auto& p : parameters) {
        if (scope->variables.contains(p.name)) {
          continue;
        }
        if (p.default_value) {
          ScopeGuard guard(*this, scope);
          scope->variables[p.name] = eval(*p.default_value);
        } else {
          scope->variables[p.name] = Value(Undefined{"parameter '" + p.name + "' was not provided"});
        }
      }
      return Value(capture(body, scope));
    });
  }

  ScopePtr scope_;
  std::string out_;
  int line_ = 1;
  int depth_ = 0;
};

Value range_function(Arguments& args) {
  std::vector<int64_t> bounds;
  for (const Value& v : args.positional) {
    if (!v.is<int64_t>() && !v.is<bool>()) {
      fail("'" + type_name(v) + "' object cannot be interpreted as an integer");
    }
    bounds.push_back(as_integer(v));
  }
  if (bounds.empty() || bounds.size() > 3) {
    fail("range expected 1 to 3 arguments");
  }
  int64_t start = bounds.size() == 1 ? 0 : bounds[0];
  int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
  int64_t step = bounds.size() == 3 ? bounds[2] : 1;
  if (step == 0) {
    fail("range() arg 3 must not be zero");
  }
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= max_range) {
      fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    items.emplace_back(i);
  }
  return make_list(std::move(items));
}

Value namespace_function(Arguments& args) {
  auto ns = std::make_shared<Namespace>();
  for (const Value& v : args.positional) {
    if (!v.is<Dict>()) {
      fail("namespace() takes a mapping as its positional argument");
    }
    for (const auto& [k, x] : v.as<Dict>()->items) {
      ns->attributes.set(k, x);
    }
  }
  for (const auto& [k, x] : args.keyword) {
    ns->attributes.set(Value(k), x);
  }
  return Value(std::move(ns));
}

Value dict_function(Arguments& args) {
  Value dict = make_dict();
  for (const Value& v : args.positional) {
    if (!v.is<Dict>()) {
      fail("dict() takes a mapping as its positional argument");
    }
    for (const auto& [k, x] : v.as<Dict>()->items) {
      dict.as<Dict>()->set(k, x);
    }
  }
  for (const auto& [k, x] : args.keyword) {
    dict.as<Dict>()->set(Value(k), x);
  }
  return dict;
}

// strftime_now reads the clock; NUVEC_CHAT_TEMPLATE_NOW (seconds since the epoch) fixes it for reproducible tests.
Value strftime_now_function(Arguments& args) {
  const Value* format = args.get(0, "format");
  if (!format || !format->is<std::string>()) {
    fail("strftime_now() takes a format string");
  }
  std::time_t now = std::time(nullptr);
  if (const char* fixed = std::getenv("NUVEC_CHAT_TEMPLATE_NOW")) {
    now = static_cast<std::time_t>(std::atoll(fixed));
  }
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[512];
  size_t n = std::strftime(buffer, sizeof buffer, format->str().c_str(), &local);
  return Value(std::string(buffer, n));
}

}  // namespace

std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& variables) {
  auto globals = std::make_shared<Scope>();
  auto& g = globals->variables;
  g["range"] = make_callable("range", range_function);
  g["namespace"] = make_callable("namespace", namespace_function);
  g["dict"] = make_callable("dict", dict_function);
  g["strftime_now"] = make_callable("strftime_now", strftime_now_function);
  g["raise_exception"] = make_callable("raise_exception", [](Arguments& args) -> Value {
    const Value* message = args.get(0, "message");
    fail(message ? to_str(*message) : "");
  });
  auto scope = child_scope(globals);
  for (const auto& [name, value] : variables) {
    scope->variables[name] = value;
  }
  return Interpreter(std::move(scope)).run(body);
}

}  // namespace nuvec::lm::jinja
