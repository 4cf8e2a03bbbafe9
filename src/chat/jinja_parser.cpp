#include "chat/jinja_parser.h"

#include <initializer_list>

#include "chat/jinja_error.h"
#include "chat/jinja_lexer.h"

namespace sft::jinja {

namespace {

const char* describe(const Token& t) {
  switch (t.type) {
    case TokenType::kEof:
      return "end of template";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockEnd:
      return "end of statement block";
    default:
      return nullptr;
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  NodeList parse_root() {
    std::string end;
    NodeList body = parse_body({}, &end);
    return body;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  Token next() {
    Token t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op) const {
    return cur().type == TokenType::kOperator && cur().text == op;
  }
  bool is_name(const char* name) const {
    return cur().type == TokenType::kName && cur().text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  std::string token_text(const Token& t) const {
    if (const char* d = describe(t)) return d;
    if (t.type == TokenType::kString) return "'" + t.text + "'";
    return t.text;
  }
  [[noreturn]] void fail(const std::string& message, const Token& at) const {
    throw TemplateError(ErrorClass::kSyntax, message, at.line, at.column);
  }
  [[noreturn]] void fail_here(const std::string& message) const { fail(message, cur()); }
  void expect_op(const char* op) {
    if (!skip_op(op))
      fail_here("expected token '" + std::string(op) + "', got '" + token_text(cur()) + "'");
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName)
      fail_here("expected token 'name', got '" + token_text(cur()) + "'");
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != TokenType::kBlockEnd)
      fail_here("expected token 'end of statement block', got '" + token_text(cur()) + "'");
    next();
  }
  NodePtr make(NodeKind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // Statements until a block whose tag name is in `ends` (the stream is left on that name).
  NodeList parse_body(std::initializer_list<const char*> ends, std::string* found) {
    NodeList body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::kData: {
          NodePtr n = make(NodeKind::kData, t);
          n->name = t.text;
          next();
          body.push_back(std::move(n));
          break;
        }
        case TokenType::kVariableBegin: {
          Token begin = next();
          NodePtr n = make(NodeKind::kOutput, begin);
          n->a = parse_tuple(false, true, {}, false);
          if (cur().type != TokenType::kVariableEnd)
            fail_here("expected token 'end of print statement', got '" + token_text(cur()) + "'");
          next();
          body.push_back(std::move(n));
          break;
        }
        case TokenType::kBlockBegin: {
          next();
          if (cur().type == TokenType::kName) {
            for (const char* e : ends) {
              if (cur().text == e) {
                *found = e;
                return body;
              }
            }
          }
          body.push_back(parse_statement(ends));
          break;
        }
        case TokenType::kEof: {
          if (ends.size() == 0) return body;
          std::string want;
          for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
          fail_here("Unexpected end of template. Jinja was looking for the following tags: " +
                    want + ".");
        }
        default:
          fail_here("unexpected '" + token_text(t) + "'");
      }
    }
  }

  NodePtr parse_statement(std::initializer_list<const char*> ends) {
    DepthGuard guard(this);
    const Token t = cur();
    if (t.type != TokenType::kName) fail_here("tag name expected");
    const std::string& tag = t.text;
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "generation") {
      next();
      expect_block_end();
      NodePtr n = make(NodeKind::kGeneration, t);
      std::string end;
      n->body = parse_body({"endgeneration"}, &end);
      next();
      expect_block_end();
      return n;
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop", t);
      next();
      expect_block_end();
      return make(tag == "break" ? NodeKind::kBreak : NodeKind::kContinue, t);
    }
    std::string msg = "Encountered unknown tag '" + tag + "'.";
    if (ends.size() > 0) {
      std::string want;
      for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
      msg += " Jinja was looking for the following tags: " + want +
             ". The innermost block that needs to be closed is '" + std::string(*ends.begin()) +
             "'.";
    }
    fail(msg, t);
  }

  NodePtr parse_if() {
    NodePtr n = make(NodeKind::kIf, next());
    while (true) {
      n->list.push_back(parse_tuple(false, false, {}, false));
      expect_block_end();
      std::string end;
      n->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      next();
      if (end == "elif") continue;
      if (end == "else") {
        expect_block_end();
        n->else_body = parse_body({"endif"}, &end);
        next();
      }
      expect_block_end();
      return n;
    }
  }

  AssignTarget parse_assign_target(bool with_namespace, const char* end_name) {
    AssignTarget target;
    if (with_namespace && cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
        peek().text == ".") {
      target.names.push_back(next().text);
      next();
      target.attr = expect_name();
      return target;
    }
    while (true) {
      if (!target.names.empty()) {
        if (!skip_op(",")) break;
        target.is_tuple = true;
      }
      if (cur().type == TokenType::kName && cur().text == end_name) break;
      if (is_op("=") || cur().type == TokenType::kBlockEnd) break;
      if (cur().type != TokenType::kName) fail_here("can't assign to '" + token_text(cur()) + "'");
      std::string name = next().text;
      if (name == "true" || name == "false" || name == "none" || name == "True" ||
          name == "False" || name == "None")
        fail_here("can't assign to 'const'");
      target.names.push_back(std::move(name));
    }
    if (target.names.empty()) fail_here("expected a name to assign to");
    return target;
  }

  NodePtr parse_for() {
    NodePtr n = make(NodeKind::kFor, next());
    n->target = parse_assign_target(false, "in");
    if (!skip_name("in")) fail_here("expected token 'in', got '" + token_text(cur()) + "'");
    n->a = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) n->b = parse_expression(true);
    if (skip_name("recursive")) n->flag = true;
    expect_block_end();
    std::string end;
    ++loop_depth_;
    n->body = parse_body({"endfor", "else"}, &end);
    --loop_depth_;
    next();
    if (end == "else") {
      expect_block_end();
      n->else_body = parse_body({"endfor"}, &end);
      next();
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set() {
    Token t = next();
    AssignTarget target = parse_assign_target(true, "");
    if (skip_op("=")) {
      NodePtr n = make(NodeKind::kSet, t);
      n->target = std::move(target);
      n->a = parse_tuple(false, true, {}, false);
      expect_block_end();
      return n;
    }
    NodePtr n = make(NodeKind::kSetBlock, t);
    n->target = std::move(target);
    if (is_op("|")) n->c = parse_filter_chain(nullptr);
    expect_block_end();
    std::string end;
    n->body = parse_body({"endset"}, &end);
    next();
    expect_block_end();
    return n;
  }

  void parse_signature(Node& n) {
    expect_op("(");
    while (!is_op(")")) {
      if (!n.strs.empty()) expect_op(",");
      if (is_op(")")) break;
      n.strs.push_back(expect_name());
      n.list.push_back(skip_op("=") ? parse_expression(true) : nullptr);
    }
    expect_op(")");
  }

  NodePtr parse_macro() {
    NodePtr n = make(NodeKind::kMacro, next());
    n->name = expect_name();
    parse_signature(*n);
    expect_block_end();
    std::string end;
    int saved = loop_depth_;
    loop_depth_ = 0;
    n->body = parse_body({"endmacro"}, &end);
    loop_depth_ = saved;
    next();
    if (cur().type == TokenType::kName) next();  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  NodePtr parse_call_block() {
    NodePtr n = make(NodeKind::kCallBlock, next());
    if (is_op("(")) parse_signature(*n);
    n->a = parse_expression(true);
    if (n->a->kind != NodeKind::kCall) fail("expected call", *toks_.data());
    expect_block_end();
    std::string end;
    n->body = parse_body({"endcall"}, &end);
    next();
    expect_block_end();
    return n;
  }

  NodePtr parse_filter_block() {
    NodePtr n = make(NodeKind::kFilterBlock, next());
    n->c = parse_filter_chain(nullptr, /*first_has_pipe=*/false);
    expect_block_end();
    std::string end;
    n->body = parse_body({"endfilter"}, &end);
    next();
    expect_block_end();
    return n;
  }

  NodePtr parse_with() {
    NodePtr n = make(NodeKind::kWith, next());
    while (cur().type != TokenType::kBlockEnd) {
      if (!n->strs.empty()) expect_op(",");
      n->strs.push_back(expect_name());
      expect_op("=");
      n->list.push_back(parse_expression(true));
    }
    expect_block_end();
    std::string end;
    n->body = parse_body({"endwith"}, &end);
    next();
    expect_block_end();
    return n;
  }

  // ---- expressions ----

  bool is_tuple_end(std::initializer_list<const char*> extra_end) const {
    TokenType ty = cur().type;
    if (ty == TokenType::kVariableEnd || ty == TokenType::kBlockEnd || ty == TokenType::kEof)
      return true;
    if (is_op(")")) return true;
    for (const char* e : extra_end) {
      if (is_name(e)) return true;
    }
    return false;
  }

  NodePtr parse_tuple(bool simplified, bool with_condexpr,
                      std::initializer_list<const char*> extra_end, bool explicit_parens) {
    const Token start = cur();
    NodeList items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parens) fail_here("Expected an expression, got '" + token_text(cur()) + "'");
    }
    NodePtr n = make(NodeKind::kTuple, start);
    n->list = std::move(items);
    return n;
  }

  // Bounds recursion on hostile input (Python would raise RecursionError).
  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) {
      if (++p->nesting_ > kMaxNesting) p->fail_here("template nested too deeply");
    }
    ~DepthGuard() { --p->nesting_; }
  };
  static constexpr int kMaxNesting = 100;

  NodePtr parse_expression(bool with_condexpr) {
    DepthGuard guard(this);
    if (!with_condexpr) return parse_or();
    NodePtr expr = parse_or();
    while (is_name("if")) {
      Token t = next();
      NodePtr n = make(NodeKind::kCondExpr, t);
      n->a = parse_or();
      n->b = std::move(expr);
      if (skip_name("else")) n->c = parse_expression(true);
      expr = std::move(n);
    }
    return expr;
  }

  NodePtr binary(NodePtr left, const Token& op, NodePtr right) {
    NodePtr n = make(NodeKind::kBinary, op);
    n->name = op.text;
    n->a = std::move(left);
    n->b = std::move(right);
    return n;
  }

  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (is_name("or")) {
      Token t = next();
      left = binary(std::move(left), t, parse_and());
    }
    return left;
  }

  NodePtr parse_and() {
    NodePtr left = parse_not();
    while (is_name("and")) {
      Token t = next();
      left = binary(std::move(left), t, parse_not());
    }
    return left;
  }

  NodePtr parse_not() {
    DepthGuard guard(this);
    if (is_name("not")) {
      Token t = next();
      NodePtr n = make(NodeKind::kUnary, t);
      n->name = "not";
      n->a = parse_not();
      return n;
    }
    return parse_compare();
  }

  NodePtr parse_compare() {
    const Token start = cur();
    NodePtr expr = parse_math1();
    NodePtr n;
    while (true) {
      std::string op;
      if (cur().type == TokenType::kOperator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
           cur().text == "<=" || cur().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!n) {
        n = make(NodeKind::kCompare, start);
        n->a = std::move(expr);
      }
      n->strs.push_back(op);
      n->list.push_back(parse_math1());
    }
    return n ? std::move(n) : std::move(expr);
  }

  NodePtr parse_math1() {
    NodePtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      Token t = next();
      left = binary(std::move(left), t, parse_concat());
    }
    return left;
  }

  NodePtr parse_concat() {
    NodePtr left = parse_math2();
    while (is_op("~")) {
      Token t = next();
      left = binary(std::move(left), t, parse_math2());
    }
    return left;
  }

  NodePtr parse_math2() {
    NodePtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Token t = next();
      left = binary(std::move(left), t, parse_pow());
    }
    return left;
  }

  NodePtr parse_pow() {
    NodePtr left = parse_unary(true);
    while (is_op("**")) {
      Token t = next();
      left = binary(std::move(left), t, parse_unary(true));
    }
    return left;
  }

  NodePtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    NodePtr node;
    if (is_op("-") || is_op("+")) {
      Token t = next();
      node = make(NodeKind::kUnary, t);
      node->name = t.text;
      node->a = parse_unary(false);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  NodePtr parse_primary() {
    const Token t = cur();
    switch (t.type) {
      case TokenType::kName: {
        next();
        NodePtr n = make(NodeKind::kConst, t);
        if (t.text == "true" || t.text == "True") {
          n->value = Value(true);
        } else if (t.text == "false" || t.text == "False") {
          n->value = Value(false);
        } else if (t.text == "none" || t.text == "None") {
          n->value = Value::none();
        } else {
          n->kind = NodeKind::kName;
          n->name = t.text;
        }
        return n;
      }
      case TokenType::kString: {
        std::string s = next().text;
        while (cur().type == TokenType::kString) s += next().text;
        NodePtr n = make(NodeKind::kConst, t);
        n->value = Value(std::move(s));
        return n;
      }
      case TokenType::kInteger: {
        next();
        NodePtr n = make(NodeKind::kConst, t);
        n->value = Value(t.int_value);
        return n;
      }
      case TokenType::kFloat: {
        next();
        NodePtr n = make(NodeKind::kConst, t);
        n->value = Value(t.float_value);
        return n;
      }
      case TokenType::kOperator:
        if (t.text == "(") {
          next();
          NodePtr n = parse_tuple(false, true, {}, true);
          expect_op(")");
          return n;
        }
        if (t.text == "[") {
          next();
          NodePtr n = make(NodeKind::kList, t);
          while (!is_op("]")) {
            if (!n->list.empty()) expect_op(",");
            if (is_op("]")) break;
            n->list.push_back(parse_expression(true));
          }
          expect_op("]");
          return n;
        }
        if (t.text == "{") {
          next();
          NodePtr n = make(NodeKind::kDict, t);
          while (!is_op("}")) {
            if (!n->list.empty()) expect_op(",");
            if (is_op("}")) break;
            n->list.push_back(parse_expression(true));
            expect_op(":");
            n->list.push_back(parse_expression(true));
          }
          expect_op("}");
          return n;
        }
        break;
      default:
        break;
    }
    fail_here("unexpected '" + token_text(t) + "'");
  }

  NodePtr parse_postfix(NodePtr node) {
    while (true) {
      if (is_op(".")) {
        Token t = next();
        if (cur().type == TokenType::kName) {
          NodePtr n = make(NodeKind::kGetAttr, t);
          n->a = std::move(node);
          n->name = next().text;
          node = std::move(n);
        } else if (cur().type == TokenType::kInteger) {
          NodePtr n = make(NodeKind::kGetItem, t);
          n->a = std::move(node);
          n->b = make(NodeKind::kConst, cur());
          n->b->value = Value(next().int_value);
          node = std::move(n);
        } else {
          fail_here("expected name or number");
        }
      } else if (is_op("[")) {
        Token t = next();
        NodePtr n = make(NodeKind::kGetItem, t);
        n->a = std::move(node);
        NodeList subs;
        while (!is_op("]")) {
          if (!subs.empty()) expect_op(",");
          subs.push_back(parse_subscribed());
        }
        expect_op("]");
        if (subs.size() == 1) {
          n->b = std::move(subs[0]);
        } else {
          n->b = make(NodeKind::kTuple, t);
          n->b->list = std::move(subs);
        }
        node = std::move(n);
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  NodePtr parse_subscribed() {
    const Token t = cur();
    NodePtr start;
    if (!is_op(":")) {
      start = parse_expression(true);
      if (!is_op(":")) return start;
    }
    next();  // ':'
    NodePtr n = make(NodeKind::kSlice, t);
    n->a = std::move(start);
    if (!is_op("]") && !is_op(",") && !is_op(":")) n->b = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) n->c = parse_expression(true);
    }
    return n;
  }

  void parse_call_args(Node& n) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (skip_op("*")) {
        n.dyn_args = parse_expression(true);
      } else if (skip_op("**")) {
        n.dyn_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
                 peek().text == "=") {
        std::string key = next().text;
        next();
        n.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!n.kwargs.empty() || n.dyn_args || n.dyn_kwargs)
          fail_here("Invalid argument syntax (positional argument follows keyword argument)");
        n.list.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  NodePtr parse_call(NodePtr callee) {
    NodePtr n = make(NodeKind::kCall, cur());
    n->a = std::move(callee);
    parse_call_args(*n);
    return n;
  }

  NodePtr parse_filter_expr(NodePtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter_chain(std::move(node));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  // "| f(args) | g ..." applied to `operand` (null in filter blocks / set blocks).
  NodePtr parse_filter_chain(NodePtr operand, bool first_has_pipe = true) {
    bool first = true;
    while (first || is_op("|")) {
      if (!(first && !first_has_pipe)) expect_op("|");
      first = false;
      const Token t = cur();
      std::string name = expect_name();
      while (skip_op(".")) name += "." + expect_name();
      if (!has_filter(name)) fail("No filter named '" + name + "'.", t);
      NodePtr n = make(NodeKind::kFilter, t);
      n->name = name;
      n->a = std::move(operand);
      if (is_op("(")) parse_call_args(*n);
      operand = std::move(n);
    }
    return operand;
  }

  NodePtr parse_test(NodePtr operand) {
    next();  // 'is'
    bool negated = skip_name("not");
    const Token t = cur();
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    if (!has_test(name)) fail("No test named '" + name + "'.", t);
    NodePtr n = make(NodeKind::kTest, t);
    n->name = name;
    n->a = std::move(operand);
    if (is_op("(")) {
      parse_call_args(*n);
    } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                cur().type == TokenType::kInteger || cur().type == TokenType::kFloat ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail_here("You cannot chain multiple tests with is");
      n->list.push_back(parse_postfix(parse_primary()));
    }
    if (!negated) return n;
    NodePtr neg = make(NodeKind::kUnary, t);
    neg->name = "not";
    neg->a = std::move(n);
    return neg;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  int nesting_ = 0;
};

}  // namespace

NodeList parse_template(std::string_view source) {
  return Parser(tokenize(source)).parse_root();
}

}  // namespace sft::jinja
