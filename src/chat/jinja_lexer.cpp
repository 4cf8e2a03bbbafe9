#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "core/utf8.h"

namespace sft::jinja {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// "\r\n" and "\r" become "\n"; one trailing newline goes (keep_trailing_newline=False).
std::string normalize_source(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's unicode-escape decoding of a string literal body (unknown escapes kept).
std::string decode_escapes(std::string_view s) {
  std::string out;
  auto put_cp = [&](uint32_t cp) { append_utf8(out, static_cast<char32_t>(cp)); };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;  // line continuation
      case 'x':
      case 'u':
      case 'U': {
        size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        if (i + n < s.size() + 0 && i + n <= s.size() - 1 + 1) {
          std::string hex(s.substr(i + 1, n));
          if (hex.size() == n && std::all_of(hex.begin(), hex.end(), ::isxdigit)) {
            put_cp(static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)));
            i += n;
            break;
          }
        }
        throw TemplateError(ErrorClass::kSyntax, "truncated \\" + std::string(1, c) + " escape");
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t cp = 0;
          size_t k = 0;
          while (k < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7') {
            cp = cp * 8 + static_cast<uint32_t>(s[i] - '0');
            ++i;
            ++k;
          }
          --i;
          put_cp(cp);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos < src_.size()) {
      size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_data(pos, src_.substr(pos));
        break;
      }
      char kind = src_[tag + 1];  // '{', '%' or '#'
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      std::string text = src_.substr(pos, tag - pos);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 || line_starting) {
          bool only_ws = l_pos < text.size();
          for (size_t i = l_pos; i < text.size() && only_ws; ++i) only_ws = is_space(text[i]);
          if (only_ws) text.resize(l_pos);
        }
      }
      emit_data(pos, text);
      size_t after = tag + 2 + (sign ? 1 : 0);
      if (kind == '%' && try_raw(tag, after, &pos, &line_starting)) continue;
      if (kind == '#') {
        pos = lex_comment(tag, after, &line_starting);
      } else {
        pos = lex_tag(tag, after, kind == '{', &line_starting);
      }
    }
    Token eof{TokenType::kEof, "", 0, 0, 0, 0};
    locate(eof, src_.size());
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return std::string::npos;
  }

  void locate(Token& t, size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    t.line = static_cast<int>(line);
    t.column = static_cast<int>(offset - line_starts_[line - 1] + 1);
  }

  [[noreturn]] void fail_at(size_t offset, const std::string& message) const {
    Token t;
    locate(t, offset);
    throw TemplateError(ErrorClass::kSyntax, message, t.line, t.column);
  }

  void push(TokenType type, std::string text, size_t offset) {
    Token t{type, std::move(text), 0, 0, 1, 1};
    locate(t, offset);
    tokens_.push_back(std::move(t));
  }

  void emit_data(size_t offset, std::string text) {
    if (!text.empty()) push(TokenType::kData, std::move(text), offset);
  }

  // Whitespace after "-%}" / "-#}" / "-}}" is eaten; after "%}" / "#}" one newline is.
  size_t after_end(size_t end_pos, char sign, bool trims, bool* line_starting) {
    size_t p = end_pos;
    if (sign == '-') {
      while (p < src_.size() && is_space(src_[p])) ++p;
    } else if (sign == '\0' && trims && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    *line_starting = p > 0 && src_[p - 1] == '\n';
    return p;
  }

  bool try_raw(size_t tag, size_t after, size_t* pos, bool* line_starting) {
    size_t p = after;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    size_t body;
    if (src_.compare(p, 3, "-%}") == 0) {
      body = p + 3;
      while (body < src_.size() && is_space(src_[body])) ++body;
    } else if (src_.compare(p, 2, "%}") == 0) {
      body = p + 2;
    } else {
      return false;
    }
    // Find "{%[-+]? endraw [+-]?%}".
    for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 1)) {
      size_t r = q + 2;
      char sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) sign = src_[r++];
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) continue;
      std::string text = src_.substr(body, q - body);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0) {
          bool only_ws = l_pos < text.size();
          for (size_t i = l_pos; i < text.size() && only_ws; ++i) only_ws = is_space(text[i]);
          if (only_ws) text.resize(l_pos);
        }
      }
      emit_data(body, text);
      *pos = after_end(r + 2, end_sign, true, line_starting);
      return true;
    }
    fail_at(tag, "Missing end of raw directive");
  }

  size_t lex_comment(size_t tag, size_t after, bool* line_starting) {
    for (size_t p = after; p + 1 < src_.size(); ++p) {
      if (src_[p] == '+' && src_.compare(p + 1, 2, "#}") == 0)
        return after_end(p + 3, '+', true, line_starting);
      if (src_[p] == '-' && src_.compare(p + 1, 2, "#}") == 0)
        return after_end(p + 3, '-', true, line_starting);
      if (src_.compare(p, 2, "#}") == 0) return after_end(p + 2, '\0', true, line_starting);
    }
    fail_at(tag, "Missing end of comment tag");
  }

  size_t lex_tag(size_t tag, size_t after, bool variable, bool* line_starting) {
    push(variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "", tag);
    std::vector<char> balance;
    size_t p = after;
    while (true) {
      if (p >= src_.size()) {
        fail_at(tag, variable ? "unexpected end of template, expected 'end of print statement'"
                              : "unexpected end of template, expected 'end of statement block'");
      }
      if (balance.empty()) {
        if (variable) {
          if (src_.compare(p, 3, "-}}") == 0) {
            push(TokenType::kVariableEnd, "", p);
            return after_end(p + 3, '-', false, line_starting);
          }
          if (src_.compare(p, 2, "}}") == 0) {
            push(TokenType::kVariableEnd, "", p);
            return after_end(p + 2, '+', false, line_starting);
          }
        } else {
          if (src_.compare(p, 3, "+%}") == 0 || src_.compare(p, 3, "-%}") == 0) {
            push(TokenType::kBlockEnd, "", p);
            return after_end(p + 3, src_[p], true, line_starting);
          }
          if (src_.compare(p, 2, "%}") == 0) {
            push(TokenType::kBlockEnd, "", p);
            return after_end(p + 2, '\0', true, line_starting);
          }
        }
      }
      char c = src_[p];
      if (is_space(c)) {
        ++p;
      } else if (is_digit(c)) {
        p = lex_number(p);
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else if (is_name_char(c)) {
        size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        push(TokenType::kName, src_.substr(p, e - p), p);
        p = e;
      } else {
        p = lex_operator(p, balance);
      }
    }
  }

  size_t lex_number(size_t p) {
    size_t e = p;
    auto digits = [&](size_t q) {
      // (\d+_)*\d+
      size_t start = q;
      while (q < src_.size() &&
             (is_digit(src_[q]) ||
              (src_[q] == '_' && q > start && q + 1 < src_.size() && is_digit(src_[q + 1]))))
        ++q;
      return q;
    };
    e = digits(p);
    size_t f = e;
    bool is_float = false;
    if (f + 1 < src_.size() && src_[f] == '.' && is_digit(src_[f + 1])) {
      f = digits(f + 1);
      is_float = true;
    }
    if (f < src_.size() && (src_[f] == 'e' || src_[f] == 'E')) {
      size_t g = f + 1;
      if (g < src_.size() && (src_[g] == '+' || src_[g] == '-')) ++g;
      if (g < src_.size() && is_digit(src_[g])) {
        f = digits(g);
        is_float = true;
      }
    }
    std::string text;
    if (is_float) {
      for (size_t i = p; i < f; ++i)
        if (src_[i] != '_') text += src_[i];
      Token t{TokenType::kFloat, text, 0, std::strtod(text.c_str(), nullptr), 1, 1};
      locate(t, p);
      tokens_.push_back(std::move(t));
      return f;
    }
    if (src_[p] == '0' && e > p + 1) {
      // jinja2 lexes "0" then the rest for a leading zero (only 0, 0_0.. form one token).
      size_t z = p + 1;
      while (z < e && (src_[z] == '0' || src_[z] == '_')) ++z;
      e = z;
    }
    for (size_t i = p; i < e; ++i)
      if (src_[i] != '_') text += src_[i];
    Token t{TokenType::kInteger, text, std::strtoll(text.c_str(), nullptr, 10), 0, 1, 1};
    locate(t, p);
    tokens_.push_back(std::move(t));
    return e;
  }

  size_t lex_string(size_t p) {
    char q = src_[p];
    size_t e = p + 1;
    while (e < src_.size() && src_[e] != q) {
      if (src_[e] == '\\' && e + 1 < src_.size()) ++e;
      ++e;
    }
    if (e >= src_.size()) fail_at(p, "unexpected char " + std::string(1, q) + "");
    try {
      push(TokenType::kString, decode_escapes(std::string_view(src_).substr(p + 1, e - p - 1)), p);
    } catch (const TemplateError& err) {
      fail_at(p, err.bare_message());
    }
    return e + 1;
  }

  size_t lex_operator(size_t p, std::vector<char>& balance) {
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(p, 2, op) == 0) {
        push(TokenType::kOperator, op, p);
        return p + 2;
      }
    }
    char c = src_[p];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      fail_at(p, std::string("unexpected char '") + c + "'");
    }
    if (c == '(') balance.push_back(')');
    if (c == '[') balance.push_back(']');
    if (c == '{') balance.push_back('}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail_at(p, std::string("unexpected '") + c + "'");
      char want = balance.back();
      balance.pop_back();
      if (want != c) fail_at(p, std::string("unexpected '") + c + "', expected '" + want + "'");
    }
    push(TokenType::kOperator, std::string(1, c), p);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(normalize_source(source)).run();
}

}  // namespace sft::jinja
