// See tokenizer_json.h.
#include "text/tokenizer_json.h"

#include <charconv>
#include <cstdlib>
#include <unordered_set>

#include "core/error.h"
#include "core/utf8.h"
#include "text/unicode.h"

namespace sft::text {

namespace {

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : s_(text), source_(source) {}

  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    fail_in_file("tokenizer",
                 {source_, "line " + std::to_string(line) + ", column " + std::to_string(col)},
                 what, "tokenizer.json must be valid JSON as written by HF tokenizers");
  }

  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
      ++pos_;
  }
  bool peek(char c) {
    ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c))
      error(std::string("expected '") + c + "'" + (pos_ >= s_.size() ? " (truncated file?)" : ""));
    ++pos_;
  }

  void hex4(uint32_t& v) {
    if (pos_ + 4 > s_.size()) error("truncated \\u escape");
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("bad \\u escape");
      v = v * 16 + uint32_t(d);
    }
  }

  // Parses a string into `out` (cleared first).
  void string(std::string& out) {
    expect('"');
    out.clear();
    size_t run = pos_;
    while (true) {
      if (pos_ >= s_.size()) error("unterminated string (truncated file?)");
      char c = s_[pos_];
      if (c == '"') {
        out.append(s_.substr(run, pos_ - run));
        ++pos_;
        return;
      }
      if (static_cast<unsigned char>(c) < 0x20) error("control character in string");
      if (c != '\\') {
        ++pos_;
        continue;
      }
      out.append(s_.substr(run, pos_ - run));
      ++pos_;
      if (pos_ >= s_.size()) error("truncated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t v;
          hex4(v);
          if (v >= 0xD800 && v < 0xDC00) {
            uint32_t lo;
            if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
              error("unpaired surrogate in \\u escape");
            pos_ += 2;
            hex4(lo);
            if (lo < 0xDC00 || lo > 0xDFFF) error("unpaired surrogate in \\u escape");
            v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
          } else if (v >= 0xDC00 && v < 0xE000) {
            error("unpaired surrogate in \\u escape");
          }
          append_utf8(out, char32_t(v));
          break;
        }
        default:
          error(std::string("bad escape '\\") + e + "'");
      }
      run = pos_;
    }
  }

  Json value(int depth) {
    if (depth > 200) error("nesting too deep");
    ws();
    if (pos_ >= s_.size()) error("unexpected end of file (truncated file?)");
    char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      Json obj = Json::object();
      if (peek('}')) return ++pos_, obj;
      std::string key;
      while (true) {
        string(key);
        expect(':');
        if (obj.contains(key)) error("duplicate key '" + key + "'");
        obj[key] = value(depth + 1);
        if (peek(',')) {
          ++pos_;
          continue;
        }
        expect('}');
        return obj;
      }
    }
    if (c == '[') {
      ++pos_;
      Json arr = Json::array();
      if (peek(']')) return ++pos_, arr;
      while (true) {
        arr.push_back(value(depth + 1));
        if (peek(',')) {
          ++pos_;
          continue;
        }
        expect(']');
        return arr;
      }
    }
    if (c == '"') {
      std::string str;
      string(str);
      return Json(std::move(str));
    }
    if (literal("true")) return Json(true);
    if (literal("false")) return Json(false);
    if (literal("null")) return Json(nullptr);
    return number();
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json number() {
    size_t b = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    bool is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c >= '0' && c <= '9')
        ++pos_;
      else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
        ++pos_, is_float = true;
      else
        break;
    }
    std::string_view t = s_.substr(b, pos_ - b);
    if (t.empty() || t == "-") error("unexpected character");
    if (!is_float) {
      if (t[0] == '-') {
        int64_t v;
        auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        if (r.ec == std::errc() && r.ptr == t.data() + t.size()) return Json(v);
      } else {
        uint64_t v;
        auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        if (r.ec == std::errc() && r.ptr == t.data() + t.size()) return Json(v);
      }
    }
    std::string copy(t);
    char* end = nullptr;
    double d = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) error("bad number '" + copy + "'");
    return Json(d);
  }

  void vocab(TokenizerJson& out) {
    expect('{');
    if (peek('}')) return void(++pos_);
    std::string key;
    while (true) {
      string(key);
      expect(':');
      ws();
      size_t b = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      int64_t id = -1;
      if (pos_ == b || pos_ - b > 10 ||
          std::from_chars(s_.data() + b, s_.data() + pos_, id).ec != std::errc())
        error("model.vocab['" + key + "']: expected a non-negative integer id");
      out.vocab.emplace_back(key, id);
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void merges(TokenizerJson& out) {
    expect('[');
    if (peek(']')) return void(++pos_);
    std::string a, b;
    while (true) {
      ws();
      if (peek('"')) {
        string(a);
        size_t sp = a.find(' ');
        if (sp == std::string::npos) {
          out.bad_merges.push_back(out.merges.size());
          out.merges.emplace_back(a, "");
        } else {
          out.merges.emplace_back(a.substr(0, sp), a.substr(sp + 1));
        }
      } else if (peek('[')) {
        ++pos_;
        ws();
        if (peek('"')) {
          string(a);
          if (peek(',')) {
            ++pos_;
            string(b);
            if (peek(']')) {
              ++pos_;
              out.merges.emplace_back(std::move(a), std::move(b));
              goto next;
            }
          }
        }
        error("model.merges[" + std::to_string(out.merges.size()) +
              "]: expected [\"a\", \"b\"] (two strings)");
      } else {
        error("model.merges[" + std::to_string(out.merges.size()) +
              "]: expected \"a b\" or [\"a\", \"b\"]");
      }
    next:
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect(']');
      return;
    }
  }

  Json model(TokenizerJson& out) {
    ws();
    if (!peek('{')) return value(1);
    ++pos_;
    Json obj = Json::object();
    if (peek('}')) return ++pos_, obj;
    std::string key;
    while (true) {
      string(key);
      expect(':');
      if (obj.contains(key) || (key == "vocab" && out.has_vocab) ||
          (key == "merges" && out.has_merges))
        error("duplicate key '" + key + "'");
      ws();
      if (key == "vocab" && peek('{')) {
        vocab(out);
        out.has_vocab = true;
      } else if (key == "merges" && peek('[')) {
        merges(out);
        out.has_merges = true;
      } else {
        obj[key] = value(2);
      }
      if (peek(',')) {
        ++pos_;
        continue;
      }
      expect('}');
      return obj;
    }
  }

  TokenizerJson document() {
    TokenizerJson out;
    if (auto bad = find_invalid_utf8(s_)) {
      pos_ = *bad;
      error("invalid UTF-8 at byte " + std::to_string(*bad));
    }
    ws();
    if (!peek('{')) error("expected a JSON object at the top level");
    ++pos_;
    out.root = Json::object();
    if (!peek('}')) {
      std::string key;
      while (true) {
        string(key);
        expect(':');
        if (out.root.contains(key)) error("duplicate key '" + key + "'");
        out.root[key] = key == "model" ? model(out) : value(1);
        if (peek(',')) {
          ++pos_;
          continue;
        }
        expect('}');
        break;
      }
    } else {
      ++pos_;
    }
    ws();
    if (pos_ != s_.size()) error("trailing characters after the JSON document");
    return out;
  }

 private:
  std::string_view s_;
  const std::string& source_;
  size_t pos_ = 0;
};

}  // namespace

TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source) {
  return Reader(text, source).document();
}

}  // namespace sft::text
