// See normalizers.h.
#include "text/normalizers.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "text/alignment.h"
#include "text/pattern.h"
#include "text/unicode.h"

namespace sft::text {

namespace {

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string& text, size_t& head) const override {
    if (head > 0 && head <= text.size()) {
      std::string first = text.substr(0, head);
      normalize_unicode(first, form_);
      head = first.size();
    }
    normalize_unicode(text, form_);
    head = std::min(head, text.size());
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    std::vector<CharChange> changes;
    normalization_changes(text, form_, changes);
    apply_changes(text, align, changes);
  }

 private:
  NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text, size_t& head) const override {
    if (head > 0 && head <= text.size()) head = to_lower(text.substr(0, head)).size();
    text = to_lower(text);
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    // HF lowercases per character: the first character of a lowercase mapping replaces
    // the source, the rest (İ → i + U+0307) are insertions.
    std::vector<CharChange> changes;
    std::string lower;
    size_t n, m;
    for (size_t i = 0; i < text.size(); i += n) {
      utf8_decode(text, i, &n);
      lower = to_lower(std::string_view(text).substr(i, n));
      for (size_t k = 0; k < lower.size(); k += m)
        changes.push_back({utf8_decode(lower, k, &m), k == 0 ? 0 : 1});
    }
    apply_changes(text, align, changes);
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text, size_t& head) const override {
    auto [b, e] = kept(text);
    head = b >= head ? 0 : head - b;
    text = text.substr(b, e - b);
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    auto [b, e] = kept(text);
    text = text.substr(b, e - b);
    align = std::vector<Align>(align.begin() + long(b), align.begin() + long(e));
  }

 private:
  // The byte range left after stripping.
  std::pair<size_t, size_t> kept(const std::string& text) const {
    size_t b = 0, e = text.size(), n;
    if (left_)
      while (b < e && is_whitespace(utf8_decode(text, b, &n))) b += n;
    if (right_) {
      while (e > b) {
        size_t s = e - 1;
        while (s > b && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
        if (!is_whitespace(utf8_decode(text, s, &n))) break;
        e = s;
      }
    }
    return {b, e};
  }

  bool left_, right_;
};

class Replace : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text, size_t& head) const override {
    // HF aligns a replacement with the last character it replaces, so a match at the start
    // reaching past the head moves the text's start away from the input's first byte.
    bool first = true;
    pattern_.for_each_match(text, [&](size_t b, size_t e) {
      if (first && b == 0 && head > 0) {
        if (content_.empty() ? e >= head : e > head)
          head = 0;
        else
          head = head - e + content_.size();
      }
      first = false;
    });
    text = pattern_.replace_all(text, content_);
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    std::string out;
    std::vector<Align> out_align;
    size_t last = 0;
    pattern_.for_each_match(text, [&](size_t b, size_t e) {
      out.append(text, last, b - last);
      out_align.insert(out_align.end(), align.begin() + long(last), align.begin() + long(b));
      out.append(content_);
      out_align.insert(out_align.end(), content_.size(), align[e - 1]);
      last = e;
    });
    out.append(text, last);
    out_align.insert(out_align.end(), align.begin() + long(last), align.end());
    text.swap(out);
    align.swap(out_align);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text, size_t& head) const override {
    if (text.empty()) return;
    text.insert(0, prefix_);
    if (head > 0) head += prefix_.size();
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    // HF prepends by replacing the first character with prefix + itself: everything takes
    // that character's alignment.
    if (text.empty()) return;
    text.insert(0, prefix_);
    align.insert(align.begin(), prefix_.size(), align.front());
  }

 private:
  std::string prefix_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text, size_t& head) const override {
    for (const auto& s : steps_) s->normalize(text, head);
  }
  void normalize_aligned(std::string& text, std::vector<Align>& align) const override {
    for (const auto& s : steps_) s->normalize_aligned(text, align);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& spec, const LoadContext& ctx,
                                            const std::string& place) {
  if (spec.is_null()) return nullptr;
  std::string type = ctx.type(spec, place);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(ctx.bool_or(spec, place, "strip_left", true),
                                   ctx.bool_or(spec, place, "strip_right", true));
  if (type == "Replace")
    return std::make_unique<Replace>(
        Pattern(ctx.field(spec, place, "pattern"), ctx, place + ".pattern"),
        ctx.string(spec, place, "content"));
  if (type == "Prepend") return std::make_unique<Prepend>(ctx.string(spec, place, "prepend"));
  if (type == "Sequence") {
    const Json& list = ctx.field(spec, place, "normalizers");
    if (!list.is_array()) ctx.fail(place + ".normalizers", "expected an array");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_normalizer(list[i], ctx, place + ".normalizers[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  ctx.fail(place + ".type", "unsupported normalizer '" + type + "'",
           "supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Sequence");
}

}  // namespace sft::text
