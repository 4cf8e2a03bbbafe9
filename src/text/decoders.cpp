// See decoders.h. Each decoder reproduces HF's quirks on purpose (Metaspace drops every
// replacement character of the first token; ByteFallback turns an invalid byte run into
// one U+FFFD per byte; ByteLevel decodes lossily over the whole list).
#include "text/decoders.h"

#include "text/pattern.h"
#include "text/unicode.h"

namespace sft::text {

namespace {

class ByteLevelDec : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      size_t start = bytes.size(), n;
      bool all = true;
      for (size_t i = 0; i < t.size(); i += n) {
        int b = byte_level_byte(utf8_decode(t, i, &n));
        if (b < 0) {
          all = false;
          break;
        }
        bytes += char(b);
      }
      if (!all) bytes.resize(start), bytes += t;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class MetaspaceDec : public Decoder {
 public:
  MetaspaceDec(std::string replacement, bool prepend)
      : replacement_(std::move(replacement)), prepend_(prepend) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && prepend_)) out += ' ';
          p += replacement_.size();
        } else {
          out += t[p++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool prepend_;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallbackDec : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (utf8_lossy(pending) == pending)
        out.push_back(pending);
      else
        for (size_t i = 0; i < pending.size(); ++i) out.push_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (auto& t : tokens) {
      int byte = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
        int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
        if (hi >= 0 && lo >= 0)
          byte = hi * 16 + lo;
        else if (t[3] == '+' && lo >= 0)
          byte = lo;  // u8::from_str_radix accepts a '+' sign
      }
      if (byte >= 0) {
        pending += char(byte);
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDec : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDec : public Decoder {
 public:
  StripDec(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) {
      std::vector<std::pair<size_t, char32_t>> chars;  // (byte offset, char)
      size_t n;
      for (size_t i = 0; i < t.size(); i += n) chars.emplace_back(i, utf8_decode(t, i, &n));
      size_t b = 0, e = chars.size();
      while (b < start_ && b < chars.size() && chars[b].second == content_) ++b;
      for (size_t k = 0; k < stop_ && e > b && chars[e - 1].second == content_; ++k) --e;
      size_t bb = b < chars.size() ? chars[b].first : t.size();
      size_t eb = e < chars.size() ? chars[e].first : t.size();
      t = t.substr(bb, eb - bb);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDec : public Decoder {
 public:
  ReplaceDec(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& t : tokens) t = pattern_.replace_all(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class SequenceDec : public Decoder {
 public:
  explicit SequenceDec(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& spec, const LoadContext& ctx,
                                      const std::string& place) {
  if (spec.is_null()) return nullptr;
  std::string type = ctx.type(spec, place);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDec>();
  if (type == "Metaspace") {
    std::string scheme = ctx.string_or(spec, place, "prepend_scheme", "");
    bool prepend =
        scheme.empty() ? ctx.bool_or(spec, place, "add_prefix_space", true) : scheme != "never";
    return std::make_unique<MetaspaceDec>(ctx.string_or(spec, place, "replacement", "\xE2\x96\x81"),
                                          prepend);
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDec>();
  if (type == "Fuse") return std::make_unique<FuseDec>();
  if (type == "Strip") {
    std::string content = ctx.string(spec, place, "content");
    size_t n = 0;
    if (content.empty() || (utf8_decode(content, 0, &n), n != content.size()))
      ctx.fail(place + ".content", "expected exactly one character");
    int64_t start = ctx.int_or(spec, place, "start", 0), stop = ctx.int_or(spec, place, "stop", 0);
    if (start < 0 || stop < 0) ctx.fail(place, "start and stop must be non-negative");
    return std::make_unique<StripDec>(utf8_decode(content, 0, &n), size_t(start), size_t(stop));
  }
  if (type == "Replace")
    return std::make_unique<ReplaceDec>(
        Pattern(ctx.field(spec, place, "pattern"), ctx, place + ".pattern"),
        ctx.string(spec, place, "content"));
  if (type == "Sequence") {
    const Json& list = ctx.field(spec, place, "decoders");
    if (!list.is_array()) ctx.fail(place + ".decoders", "expected an array");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_decoder(list[i], ctx, place + ".decoders[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequenceDec>(std::move(steps));
  }
  ctx.fail(place + ".type", "unsupported decoder '" + type + "'",
           "supported: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence");
}

}  // namespace sft::text
