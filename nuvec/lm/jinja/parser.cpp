#include "nuvec/lm/jinja/parser.h"

#include <cstdlib>
#include <initializer_list>

#include "nuvec/lm/jinja/lexer.h"
#include "nuvec/lm/jinja/text.h"

namespace nuvec::lm::jinja {
namespace {

template <class Node>
ExprPtr make_expr(Node node, int line) {
  return std::make_unique<Expr>(Expr{std::move(node), line});
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_template() {
    Body body = parse_body({});
    if (peek().kind != TokenKind::end) {
      fail_here("unexpected '" + peek().text + "'");
    }
    return body;
  }

 private:
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) {
      ++pos_;
    }
    return t;
  }
  bool at_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::op && peek(ahead).text == op;
  }
  bool at_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::name && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!at_op(op)) {
      return false;
    }
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!at_name(name)) {
      return false;
    }
    next();
    return true;
  }
  [[noreturn]] void fail_here(const std::string& message) const { syntax_error(peek().line, message); }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::end:
        return "end of template";
      case TokenKind::block_end:
        return "end of statement block";
      case TokenKind::variable_end:
        return "end of print statement";
      default:
        return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) {
      fail_here(std::string("expected '") + op + "', got " + describe(peek()));
    }
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::name) {
      fail_here("expected a name, got " + describe(peek()));
    }
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::block_end) {
      fail_here("expected end of statement block, got " + describe(peek()));
    }
    next();
  }

  // Statements up to a `{% name %}` with name in `stops`; leaves the position on that name.
  Body parse_body(std::initializer_list<const char*> stops) {
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.kind == TokenKind::end) {
        for (const char* stop : stops) {
          if (std::string_view(stop).starts_with("end")) {
            fail_here(std::string("unexpected end of template, expected '") + stop + "'");
          }
        }
        return body;
      }
      if (t.kind == TokenKind::text) {
        body.push_back(Stmt{ast::Text{next().text}, t.line});
      } else if (t.kind == TokenKind::variable_begin) {
        next();
        int line = peek().line;
        body.push_back(Stmt{ast::Output{parse_tuple(true)}, line});
        if (peek().kind != TokenKind::variable_end) {
          fail_here("expected end of print statement, got " + describe(peek()));
        }
        next();
      } else if (t.kind == TokenKind::block_begin) {
        next();
        for (const char* stop : stops) {
          if (at_name(stop)) {
            return body;
          }
        }
        parse_statement(body);
      } else {
        fail_here("unexpected " + describe(t));
      }
    }
  }

  void parse_statement(Body& body) {
    int line = peek().line;
    NestingGuard guard(*this);
    std::string keyword = expect_name();
    if (keyword == "for") {
      body.push_back(Stmt{parse_for(), line});
    } else if (keyword == "if") {
      body.push_back(Stmt{parse_if(), line});
    } else if (keyword == "set") {
      body.push_back(parse_set(line));
    } else if (keyword == "macro") {
      ast::Macro macro;
      macro.name = expect_name();
      macro.parameters = parse_parameters();
      expect_block_end();
      macro.body = parse_end_tag("endmacro");
      body.push_back(Stmt{std::move(macro), line});
    } else if (keyword == "call") {
      ast::CallBlock call;
      if (at_op("(")) {
        call.caller_parameters = parse_parameters();
      }
      call.call = parse_expression(true);
      if (!std::holds_alternative<ast::Call>(call.call->node)) {
        syntax_error(line, "expected a call after 'call'");
      }
      expect_block_end();
      call.body = parse_end_tag("endcall");
      body.push_back(Stmt{std::move(call), line});
    } else if (keyword == "filter") {
      ast::FilterBlock block;
      do {
        block.filters.push_back(parse_filter_call());
      } while (skip_op("|"));
      expect_block_end();
      block.body = parse_end_tag("endfilter");
      body.push_back(Stmt{std::move(block), line});
    } else if (keyword == "with") {
      ast::With with;
      while (peek().kind != TokenKind::block_end) {
        if (!with.assignments.empty()) {
          expect_op(",");
        }
        std::string name = expect_name();
        expect_op("=");
        with.assignments.emplace_back(name, parse_expression(true));
      }
      expect_block_end();
      with.body = parse_end_tag("endwith");
      body.push_back(Stmt{std::move(with), line});
    } else if (keyword == "break" || keyword == "continue") {
      if (loop_depth_ == 0) {
        syntax_error(line, "'" + keyword + "' outside of a loop");
      }
      expect_block_end();
      body.push_back(keyword == "break" ? Stmt{ast::Break{}, line} : Stmt{ast::Continue{}, line});
    } else if (keyword == "generation") {
      // transformers' AssistantTracker only marks assistant text; the body renders in place.
      expect_block_end();
      for (Stmt& s : parse_end_tag("endgeneration")) {
        body.push_back(std::move(s));
      }
    } else {
      syntax_error(line, "encountered unknown tag '" + keyword + "'");
    }
  }

  // The body up to `{% end %}`, consuming that tag.
  Body parse_end_tag(const char* end) {
    Body body = parse_body({end});
    next();
    expect_block_end();
    return body;
  }

  ast::For parse_for() {
    ast::For node;
    node.target = parse_target(false);
    if (!skip_name("in")) {
      fail_here("expected 'in', got " + describe(peek()));
    }
    node.iterable = parse_tuple(false, {"recursive"});
    if (skip_name("if")) {
      node.condition = parse_expression(true);
    }
    node.recursive = skip_name("recursive");
    expect_block_end();
    ++loop_depth_;
    node.body = parse_body({"endfor", "else"});
    --loop_depth_;
    if (skip_name("else")) {
      expect_block_end();
      node.otherwise = parse_body({"endfor"});
    }
    next();
    expect_block_end();
    return node;
  }

  ast::If parse_if() {
    ast::If node;
    for (;;) {
      ExprPtr condition = parse_tuple(false);
      expect_block_end();
      Body body = parse_body({"elif", "else", "endif"});
      node.branches.emplace_back(std::move(condition), std::move(body));
      if (skip_name("elif")) {
        continue;
      }
      if (skip_name("else")) {
        expect_block_end();
        node.otherwise = parse_body({"endif"});
      }
      next();
      expect_block_end();
      return node;
    }
  }

  Stmt parse_set(int line) {
    Target target = parse_target(true);
    if (skip_op("=")) {
      ExprPtr value = parse_tuple(true);
      expect_block_end();
      return Stmt{ast::Set{std::move(target), std::move(value)}, line};
    }
    if (target.names.size() != 1 || !target.attribute.empty()) {
      syntax_error(line, "expected '=' in 'set'");
    }
    ast::SetBlock block;
    block.name = target.names[0];
    while (skip_op("|")) {
      block.filters.push_back(parse_filter_call());
    }
    expect_block_end();
    block.body = parse_end_tag("endset");
    return Stmt{std::move(block), line};
  }

  Target parse_target(bool allow_attribute) {
    Target target;
    bool parenthesized = skip_op("(");
    target.names.push_back(expect_name());
    if (allow_attribute && !parenthesized && skip_op(".")) {
      target.attribute = expect_name();
      return target;
    }
    while (skip_op(",")) {
      if (peek().kind != TokenKind::name || at_name("in")) {
        break;
      }
      target.names.push_back(expect_name());
    }
    if (parenthesized) {
      expect_op(")");
    }
    return target;
  }

  std::vector<ast::Parameter> parse_parameters() {
    std::vector<ast::Parameter> parameters;
    expect_op("(");
    while (!skip_op(")")) {
      if (!parameters.empty()) {
        expect_op(",");
      }
      if (skip_op(")")) {
        break;
      }
      ast::Parameter p{expect_name(), nullptr};
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
      }
      parameters.push_back(std::move(p));
    }
    return parameters;
  }

  // An expression or bare tuple `a, b`, ending at a tag end, `)` or one of `end_names`.
  ExprPtr parse_tuple(bool with_condition, std::initializer_list<const char*> end_names = {}) {
    int line = peek().line;
    auto at_end = [&] {
      const Token& t = peek();
      if (t.kind == TokenKind::block_end || t.kind == TokenKind::variable_end || t.kind == TokenKind::end) {
        return true;
      }
      if (at_op(")")) {
        return true;
      }
      for (const char* n : end_names) {
        if (at_name(n)) {
          return true;
        }
      }
      return false;
    };
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (!at_end()) {
      if (!items.empty()) {
        if (!skip_op(",")) {
          break;
        }
        is_tuple = true;
        if (at_end()) {
          break;
        }
      }
      items.push_back(parse_expression(with_condition));
    }
    if (items.empty()) {
      fail_here("expected an expression, got " + describe(peek()));
    }
    if (!is_tuple) {
      return std::move(items[0]);
    }
    return make_expr(ast::ListLiteral{std::move(items), true}, line);
  }

  ExprPtr parse_expression(bool with_condition) {
    if (!with_condition) {
      return parse_or();
    }
    ExprPtr expr = parse_or();
    while (at_name("if")) {
      int line = next().line;
      ExprPtr condition = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_expression(true) : nullptr;
      expr = make_expr(ast::Conditional{std::move(condition), std::move(expr), std::move(otherwise)}, line);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      int line = next().line;
      left = make_expr(ast::Binary{"or", std::move(left), parse_and()}, line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      int line = next().line;
      left = make_expr(ast::Binary{"and", std::move(left), parse_not()}, line);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      int line = next().line;
      return make_expr(ast::Unary{"not", parse_not()}, line);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = peek().line;
    ExprPtr first = parse_math1();
    ast::Compare compare{std::move(first), {}};
    for (;;) {
      const Token& t = peek();
      if (t.kind == TokenKind::op &&
          (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=")) {
        std::string op = next().text;
        compare.rest.emplace_back(op, parse_math1());
      } else if (skip_name("in")) {
        compare.rest.emplace_back("in", parse_math1());
      } else if (at_name("not") && at_name("in", 1)) {
        next();
        next();
        compare.rest.emplace_back("notin", parse_math1());
      } else {
        break;
      }
    }
    if (compare.rest.empty()) {
      return std::move(compare.first);
    }
    return make_expr(std::move(compare), line);
  }

  ExprPtr parse_binary_level(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> ops) {
    ExprPtr left = (this->*operand)();
    for (;;) {
      const char* found = nullptr;
      for (const char* op : ops) {
        if (at_op(op)) {
          found = op;
        }
      }
      if (!found) {
        return left;
      }
      int line = next().line;
      left = make_expr(ast::Binary{found, std::move(left), (this->*operand)()}, line);
    }
  }
  ExprPtr parse_math1() { return parse_binary_level(&Parser::parse_concat, {"+", "-"}); }
  ExprPtr parse_concat() { return parse_binary_level(&Parser::parse_math2, {"~"}); }
  ExprPtr parse_math2() { return parse_binary_level(&Parser::parse_pow, {"*", "/", "//", "%"}); }
  ExprPtr parse_pow() { return parse_binary_level(&Parser::parse_unary_filtered, {"**"}); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    int line = peek().line;
    NestingGuard guard(*this);
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
      std::string op = next().text;
      node = make_expr(ast::Unary{op, parse_unary(false)}, line);
    } else {
      node = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
  }

  ExprPtr parse_primary() {
    const Token& t = next();
    switch (t.kind) {
      case TokenKind::name:
        if (t.text == "true" || t.text == "True") {
          return make_expr(ast::Literal{Value(true)}, t.line);
        }
        if (t.text == "false" || t.text == "False") {
          return make_expr(ast::Literal{Value(false)}, t.line);
        }
        if (t.text == "none" || t.text == "None") {
          return make_expr(ast::Literal{Value(None{})}, t.line);
        }
        return make_expr(ast::Name{t.text}, t.line);
      case TokenKind::string: {
        std::string text = t.text;
        while (peek().kind == TokenKind::string) {
          text += next().text;
        }
        return make_expr(ast::Literal{Value(std::move(text))}, t.line);
      }
      case TokenKind::integer:
        return make_expr(ast::Literal{integer_value(t)}, t.line);
      case TokenKind::floating:
        return make_expr(ast::Literal{Value(std::strtod(t.text.c_str(), nullptr))}, t.line);
      case TokenKind::op:
        if (t.text == "(") {
          if (skip_op(")")) {
            return make_expr(ast::ListLiteral{{}, true}, t.line);
          }
          ExprPtr inner = parse_tuple(true);
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          ast::ListLiteral list;
          while (!skip_op("]")) {
            if (!list.items.empty()) {
              expect_op(",");
            }
            if (skip_op("]")) {
              break;
            }
            list.items.push_back(parse_expression(true));
          }
          return make_expr(std::move(list), t.line);
        }
        if (t.text == "{") {
          ast::DictLiteral dict;
          while (!skip_op("}")) {
            if (!dict.items.empty()) {
              expect_op(",");
            }
            if (skip_op("}")) {
              break;
            }
            ExprPtr key = parse_expression(true);
            expect_op(":");
            dict.items.emplace_back(std::move(key), parse_expression(true));
          }
          return make_expr(std::move(dict), t.line);
        }
        break;
      default:
        break;
    }
    syntax_error(t.line, "unexpected " + describe(t));
  }

  static Value integer_value(const Token& t) {
    std::optional<int64_t> value = parse_integer(t.text);
    if (!value) {
      syntax_error(t.line, "integer literal too large");
    }
    return Value(*value);
  }

  ExprPtr parse_postfix(ExprPtr node) {
    for (;;) {
      int line = peek().line;
      if (skip_op(".")) {
        const Token& t = next();
        if (t.kind == TokenKind::name) {
          node = make_expr(ast::GetAttr{std::move(node), t.text}, line);
        } else if (t.kind == TokenKind::integer) {
          node = make_expr(ast::GetItem{std::move(node), make_expr(ast::Literal{integer_value(t)}, line)}, line);
        } else {
          syntax_error(line, "expected a name after '.'");
        }
      } else if (skip_op("[")) {
        node = parse_subscript(std::move(node), line);
      } else if (at_op("(")) {
        node = make_expr(ast::Call{std::move(node), parse_call_args()}, line);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!skip_op("]")) {
      if (skip_op(":")) {
        is_slice = true;
        if (++part > 2) {
          fail_here("too many ':' in slice");
        }
        continue;
      }
      if (parts[part]) {
        fail_here("expected ']', got " + describe(peek()));
      }
      parts[part] = part == 0 && !is_slice ? parse_tuple_in_brackets() : parse_expression(true);
    }
    if (!is_slice) {
      if (!parts[0]) {
        syntax_error(line, "expected a subscript");
      }
      return make_expr(ast::GetItem{std::move(object), std::move(parts[0])}, line);
    }
    return make_expr(ast::Slice{std::move(object), std::move(parts[0]), std::move(parts[1]), std::move(parts[2])},
                     line);
  }

  ExprPtr parse_tuple_in_brackets() {
    int line = peek().line;
    ExprPtr first = parse_expression(true);
    if (!at_op(",")) {
      return first;
    }
    std::vector<ExprPtr> items;
    items.push_back(std::move(first));
    while (skip_op(",") && !at_op("]")) {
      items.push_back(parse_expression(true));
    }
    return make_expr(ast::ListLiteral{std::move(items), true}, line);
  }

  ArgExprs parse_call_args() {
    ArgExprs args;
    expect_op("(");
    while (!skip_op(")")) {
      if (!args.positional.empty() || !args.keyword.empty()) {
        expect_op(",");
        if (skip_op(")")) {
          break;
        }
      }
      if (at_op("*") || at_op("**")) {
        fail_here("'*' and '**' arguments are not supported");
      }
      if (peek().kind == TokenKind::name && at_op("=", 1)) {
        std::string name = next().text;
        next();
        args.keyword.emplace_back(name, parse_expression(true));
      } else {
        if (!args.keyword.empty()) {
          fail_here("positional argument follows keyword argument");
        }
        args.positional.push_back(parse_expression(true));
      }
    }
    return args;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) {
      name += '.';
      name += expect_name();
    }
    return name;
  }

  FilterCall parse_filter_call() {
    FilterCall call;
    call.name = parse_dotted_name();
    if (at_op("(")) {
      call.args = parse_call_args();
    }
    return call;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    for (;;) {
      int line = peek().line;
      if (skip_op("|")) {
        node = make_expr(ast::Filter{std::move(node), parse_filter_call()}, line);
      } else if (skip_name("is")) {
        ast::Test test{std::move(node), "", {}, skip_name("not")};
        test.name = parse_dotted_name();
        const Token& t = peek();
        if (at_op("(")) {
          test.args = parse_call_args();
        } else if ((t.kind == TokenKind::name || t.kind == TokenKind::string || t.kind == TokenKind::integer ||
                    t.kind == TokenKind::floating || at_op("[") || at_op("{")) &&
                   !at_name("else") && !at_name("or") && !at_name("and")) {
          if (at_name("is")) {
            fail_here("you cannot chain multiple tests with 'is'");
          }
          test.args.positional.push_back(parse_postfix(parse_primary()));
        }
        node = make_expr(std::move(test), line);
      } else if (at_op("(")) {
        node = make_expr(ast::Call{std::move(node), parse_call_args()}, line);
      } else {
        return node;
      }
    }
  }

  // Deep nesting would exhaust the stack of this recursive-descent parser; no real template nests this far.
  struct NestingGuard {
    explicit NestingGuard(Parser& p) : parser(p) {
      if (++parser.nesting_ > 250) {
        parser.fail_here("template nests too deeply");
      }
    }
    ~NestingGuard() { --parser.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;
    Parser& parser;
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int nesting_ = 0;
};

}  // namespace

Body parse(std::string_view source) { return Parser(tokenize(source)).parse_template(); }

}  // namespace nuvec::lm::jinja
