#pragma once

// The parsed template: expressions and statements as closed variant sets, one node kind per alternative.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nuvec/lm/jinja/value.h"

namespace nuvec::lm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// Call arguments as written: positional, then `name=value`.
struct ArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

/// `name(args)` after a `|`.
struct FilterCall {
  std::string name;
  ArgExprs args;
};

namespace ast {

struct Literal {
  Value value;
};
struct Name {
  std::string name;
};
struct ListLiteral {
  std::vector<ExprPtr> items;
  bool is_tuple = false;
};
struct DictLiteral {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttr {
  ExprPtr object;
  std::string name;
};
struct GetItem {
  ExprPtr object;
  ExprPtr key;
};
struct Slice {
  ExprPtr object;
  ExprPtr start, stop, step;  // each may be null
};
struct Call {
  ExprPtr callee;
  ArgExprs args;
};
struct Filter {
  ExprPtr input;
  FilterCall filter;
};
struct Test {
  ExprPtr input;
  std::string name;
  ArgExprs args;
  bool negated = false;
};
struct Unary {
  std::string op;  // not, -, +
  ExprPtr operand;
};
struct Binary {
  std::string op;  // and or + - * / // % ** ~
  ExprPtr left, right;
};
struct Compare {
  ExprPtr first;
  std::vector<std::pair<std::string, ExprPtr>> rest;  // == != < > <= >= in notin
};
struct Conditional {
  ExprPtr condition, then, otherwise;  // otherwise may be null: undefined
};

}  // namespace ast

/// An expression node and the template line it is on.
struct Expr {
  std::variant<ast::Literal, ast::Name, ast::ListLiteral, ast::DictLiteral, ast::GetAttr, ast::GetItem, ast::Slice,
               ast::Call, ast::Filter, ast::Test, ast::Unary, ast::Binary, ast::Compare, ast::Conditional>
      node;
  int line = 0;
};

struct Stmt;
using Body = std::vector<Stmt>;

/// Where a `set` or `for` puts values: names (several unpack a sequence) or one namespace attribute.
struct Target {
  std::vector<std::string> names;
  std::string attribute;  // set when assigning `names[0].attribute`
};

namespace ast {

struct Text {
  std::string text;
};
struct Output {
  ExprPtr value;
};
struct If {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if and each elif
  Body otherwise;
};
struct For {
  Target target;
  ExprPtr iterable;
  ExprPtr condition;  // `for x in y if cond`; may be null
  Body body, otherwise;
  bool recursive = false;
};
struct Set {
  Target target;
  ExprPtr value;
};
struct SetBlock {
  std::string name;
  std::vector<FilterCall> filters;
  Body body;
};
struct Parameter {
  std::string name;
  ExprPtr default_value;  // may be null
};
struct Macro {
  std::string name;
  std::vector<Parameter> parameters;
  Body body;
};
struct CallBlock {
  ExprPtr call;
  std::vector<Parameter> caller_parameters;
  Body body;
};
struct FilterBlock {
  std::vector<FilterCall> filters;
  Body body;
};
struct With {
  std::vector<std::pair<std::string, ExprPtr>> assignments;
  Body body;
};
struct Break {};
struct Continue {};

}  // namespace ast

/// A statement node and the template line it is on.
struct Stmt {
  std::variant<ast::Text, ast::Output, ast::If, ast::For, ast::Set, ast::SetBlock, ast::Macro, ast::CallBlock,
               ast::FilterBlock, ast::With, ast::Break, ast::Continue>
      node;
  int line = 0;
};

}  // namespace nuvec::lm::jinja
