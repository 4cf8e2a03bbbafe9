// Jinja parser: tokens → syntax tree, following jinja2's grammar and precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** (left-assoc) < unary
// < postfix/filters/tests) and its statement set: if, for, set, macro, call, filter,
// with, raw (in the lexer), break/continue (loopcontrols), generation (transformers).
//
// Unknown tags, filters and tests are syntax errors at parse time, as jinja2 reports them
// when compiling. Errors carry the line and column of the offending token.
#pragma once

#include <string_view>

#include "chat/jinja_ast.h"

namespace sft::jinja {

// The top-level statements of a template.
NodeList parse_template(std::string_view source);

// Whether the engine knows a filter / test of this name (jinja_filters.cpp, jinja_tests.cpp).
bool has_filter(std::string_view name);
bool has_test(std::string_view name);

}  // namespace sft::jinja
