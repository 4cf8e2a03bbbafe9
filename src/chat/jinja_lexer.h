// Jinja lexer with jinja2's whitespace rules as transformers configures them:
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, default delimiters.
//
// The source's newlines are normalised to "\n" and one trailing newline is dropped, as
// jinja2 does. Then data is split from {{ }}, {% %} and {# #} tags: "-" strips all
// whitespace on that side, "+" disables lstrip/trim, lstrip removes the spaces and tabs
// between a line start and a block/comment tag, trim removes the first newline after a
// block/comment tag. {% raw %} bodies come back as data. Tag contents become tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sft::jinja {

enum class TokenType : uint8_t {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof,
};

struct Token {
  TokenType type;
  std::string text;  // data, name, decoded string, operator spelling
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

// Throws TemplateError(kSyntax) with line and column for unclosed tags, bad strings,
// unbalanced brackets.
std::vector<Token> tokenize(std::string_view source);

}  // namespace sft::jinja
