// The syntax tree a parsed template is: one Node type tagged by NodeKind, built once by
// the parser and then only read by the interpreter (so a Template is safe to render from
// many threads at once).
//
// Field use per kind (unused fields stay empty):
//   kConst value · kName name · kList/kTuple list · kDict list = k0,v0,k1,v1...
//   kGetAttr a.name · kGetItem a[b] · kSlice a:b:c (each may be null)
//   kCall a(list, kwargs) · kFilter/kTest name, a (operand; null in filter blocks), list, kwargs
//   kUnary name a · kBinary a name b (also "and", "or") · kCompare a, strs = ops, list = rhs
//   kCondExpr b if a else c
//   kData name = text · kOutput a · kIf list = conds, bodies = bodies, else_body
//   kFor target, a = iterable, b = filter, body, else_body, flag = recursive
//   kSet target = a · kSetBlock target, body, c = filter chain · kMacro name, strs = params,
//   list = defaults (null for none), body · kCallBlock a = call, strs/list = caller params, body
//   kFilterBlock c = filter chain, body · kBreak · kContinue · kGeneration body
//   kWith strs = names, list = values, body
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace sft::jinja {

enum class NodeKind : uint8_t {
  kConst,
  kName,
  kList,
  kTuple,
  kDict,
  kGetAttr,
  kGetItem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kUnary,
  kBinary,
  kCompare,
  kCondExpr,
  kData,
  kOutput,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kBreak,
  kContinue,
  kGeneration,
  kWith,
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

// Left side of set / for: names (tuple unpacking when several or `tuple`), or ns.attr.
struct AssignTarget {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string attr;  // non-empty: names[0].attr (namespace assignment)
};

struct Node {
  NodeKind kind;
  int line = 0;
  int column = 0;
  std::string name;
  Value value;
  NodePtr a, b, c;
  NodeList list;
  std::vector<std::pair<std::string, NodePtr>> kwargs;
  NodePtr dyn_args, dyn_kwargs;
  std::vector<std::string> strs;
  std::vector<NodeList> bodies;
  NodeList body, else_body;
  AssignTarget target;
  bool flag = false;
};

}  // namespace sft::jinja
