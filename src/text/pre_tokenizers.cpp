// See pre_tokenizers.h. Every splitting pre-tokenizer reduces to one routine: describe the
// piece as alternating (non-)match segments, then apply the delimiter behavior exactly as
// HF's NormalizedString::split folds them.
#include "text/pre_tokenizers.h"

#include <algorithm>
#include <vector>

#include "text/pattern.h"
#include "text/regex.h"
#include "text/unicode.h"

namespace sft::text {

namespace {

struct Seg {
  uint32_t b, e;
  bool match;
};

std::vector<Seg>& seg_scratch() {
  thread_local std::vector<Seg> segs;
  return segs;
}

// Folds `segs` (covering the piece) by `behavior` and appends the kept parts to `out`.
// `al` (offsets only, else null): the alignment of each byte of `text`.
void emit(std::string_view text, bool at_origin, const Align* al, std::vector<Seg>& segs,
          SplitBehavior behavior, bool invert, Pieces& out) {
  auto add = [&](uint32_t b, uint32_t e) {
    out.add(text.substr(b, e - b), -1, at_origin && b == 0, al ? al + b : nullptr);
  };
  if (invert)
    for (auto& s : segs) s.match = !s.match;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const auto& s : segs) add(s.b, s.e);
      return;
    case SplitBehavior::kRemoved:
      for (const auto& s : segs)
        if (!s.match) add(s.b, s.e);
      return;
    case SplitBehavior::kContiguous:
    case SplitBehavior::kMergedWithPrevious: {
      size_t n = 0;
      bool prev = false;
      for (const auto& s : segs) {
        bool merge = behavior == SplitBehavior::kContiguous ? s.match == prev : s.match && !prev;
        if (merge && n > 0)
          segs[n - 1].e = s.e;
        else
          segs[n++] = s;
        prev = s.match;
      }
      for (size_t i = 0; i < n; ++i) add(segs[i].b, segs[i].e);
      return;
    }
    case SplitBehavior::kMergedWithNext: {
      // Folded right to left into the tail of `segs`, then emitted in order.
      size_t n = segs.size(), k = n;
      bool prev = false;
      for (size_t i = n; i-- > 0;) {
        Seg s = segs[i];
        if (s.match && !prev && k < n)
          segs[k].b = s.b;
        else
          segs[--k] = s;
        prev = s.match;
      }
      for (size_t i = k; i < n; ++i) add(segs[i].b, segs[i].e);
      return;
    }
  }
}

// Runs `split_piece(text, at_origin, align, out)` on every text piece of `io` (`align` is
// null unless offsets are tracked).
template <typename F>
void split_pieces(Pieces& io, Pieces& scratch, F&& split_piece) {
  scratch.clear();
  scratch.track = io.track;
  for (const auto& p : io.items) {
    if (p.token_id >= 0)
      scratch.items.push_back(p);
    else
      split_piece(io.view(p), p.at_origin, io.align_of(p), scratch);
  }
  std::swap(io, scratch);
}

// Segments from a "find matches" callable (HF Pattern::find_matches for regexes/strings).
template <typename Finder>
std::vector<Seg>& segments_of(std::string_view text, Finder&& finder) {
  auto& segs = seg_scratch();
  segs.clear();
  uint32_t prev = 0;
  finder(text, [&](size_t b, size_t e) {
    if (b > prev) segs.push_back({prev, uint32_t(b), false});
    segs.push_back({uint32_t(b), uint32_t(e), true});
    prev = uint32_t(e);
  });
  if (prev < text.size()) segs.push_back({prev, uint32_t(text.size()), false});
  return segs;
}

// Segments where each character satisfying `pred` is its own match (HF's Fn(char) pattern).
template <typename Pred>
std::vector<Seg>& char_segments(std::string_view text, Pred&& pred) {
  return segments_of(text, [&](std::string_view t, auto&& on_match) {
    size_t n;
    for (size_t i = 0; i < t.size(); i += n)
      if (pred(utf8_decode(t, i, &n))) on_match(i, i + n);
  });
}

SplitBehavior parse_behavior(const std::string& s, const LoadContext& ctx,
                             const std::string& place) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  ctx.fail(place, "unknown split behavior '" + s + "'",
           "use Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern) : nullptr) {}

  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    if (add_prefix_space_ || regex_) {
      split_pieces(io, scratch,
                   [&](std::string_view text, bool origin, const Align* al, Pieces& out) {
                     std::string_view t = text;
                     if (add_prefix_space_ && (t.empty() || t[0] != ' ')) {
                       prefixed_.assign(" ").append(text);
                       t = prefixed_;
                       if (al) {
                         // HF prepends by replacing the first character: the space takes
                         // its alignment.
                         prefixed_align_.assign(al, al + text.size());
                         if (!text.empty()) prefixed_align_.insert(prefixed_align_.begin(), al[0]);
                         al = prefixed_align_.data();
                       }
                     }
                     if (!regex_) return out.add(t, -1, origin, al);
                     auto& segs = segments_of(
                         t, [&](std::string_view s, auto&& cb) { regex_->for_each_match(s, cb); });
                     emit(t, origin, al, segs, SplitBehavior::kIsolated, false, out);
                   });
    }
    const auto& alphabet = byte_level_alphabet();
    scratch.clear();
    scratch.track = io.track;
    for (const auto& p : io.items) {
      if (p.token_id >= 0) {
        scratch.items.push_back(p);
        continue;
      }
      auto b = static_cast<uint32_t>(scratch.text.size());
      std::string_view text = io.view(p);
      for (unsigned char c : text) scratch.text += alphabet[c];
      if (io.track) {
        // Each byte's character keeps the alignment of the character the byte belongs to.
        const Align* al = io.align_of(p);
        for (size_t i = 0; i < text.size(); ++i)
          scratch.align.insert(scratch.align.end(),
                               alphabet[static_cast<unsigned char>(text[i])].size(), al[i]);
      }
      scratch.items.push_back({b, static_cast<uint32_t>(scratch.text.size()), -1, p.at_origin});
    }
    std::swap(io, scratch);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
  static thread_local std::string prefixed_;
  static thread_local std::vector<Align> prefixed_align_;
};
thread_local std::string ByteLevel::prefixed_;
thread_local std::vector<Align> ByteLevel::prefixed_align_;

class Split : public PreTokenizer {
 public:
  Split(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    split_pieces(
        io, scratch, [&](std::string_view text, bool origin, const Align* al, Pieces& out) {
          auto& segs = segments_of(
              text, [&](std::string_view s, auto&& cb) { pattern_.for_each_match(s, cb); });
          emit(text, origin, al, segs, behavior_, invert_, out);
        });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    split_pieces(
        io, scratch, [&](std::string_view text, bool origin, const Align* al, Pieces& out) {
          buffer_.clear();
          buffer_align_.clear();
          bool prepend =
              scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && origin);
          if (prepend && text.substr(0, replacement_.size()) != replacement_ &&
              !(text.size() && text[0] == ' ')) {
            buffer_ += replacement_;
            // Prepended like HF's prepend: aligned with the first character.
            if (al) buffer_align_.insert(buffer_align_.end(), replacement_.size(), al[0]);
          }
          for (size_t i = 0; i < text.size(); ++i) {
            bool space = text[i] == ' ';
            if (space)
              buffer_ += replacement_;
            else
              buffer_ += text[i];
            if (al)
              buffer_align_.insert(buffer_align_.end(), space ? replacement_.size() : 1, al[i]);
          }
          const Align* bal = al ? buffer_align_.data() : nullptr;
          if (!split_) return out.add(buffer_, -1, origin, bal);
          std::string_view rep = replacement_;
          auto& segs = segments_of(buffer_, [&](std::string_view s, auto&& cb) {
            size_t pos = 0;
            while ((pos = s.find(rep, pos)) != std::string_view::npos) {
              cb(pos, pos + rep.size());
              pos += rep.size();
            }
          });
          emit(buffer_, origin, bal, segs, SplitBehavior::kMergedWithNext, false, out);
        });
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  static thread_local std::string buffer_;
  static thread_local std::vector<Align> buffer_align_;
};
thread_local std::string Metaspace::buffer_;
thread_local std::vector<Align> Metaspace::buffer_align_;

// Digits, Punctuation and WhitespaceSplit: splits on a character predicate.
template <typename Pred>
class CharSplit : public PreTokenizer {
 public:
  CharSplit(Pred pred, SplitBehavior behavior) : pred_(pred), behavior_(behavior) {}
  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    split_pieces(io, scratch,
                 [&](std::string_view text, bool origin, const Align* al, Pieces& out) {
                   emit(text, origin, al, char_segments(text, pred_), behavior_, false, out);
                 });
  }

 private:
  Pred pred_;
  SplitBehavior behavior_;
};
template <typename Pred>
std::unique_ptr<PreTokenizer> char_split(Pred pred, SplitBehavior behavior) {
  return std::make_unique<CharSplit<Pred>>(pred, behavior);
}

// Whitespace: keeps the runs of \w+ and of [^\w\s]+ (HF's regex, written out by hand).
class Whitespace : public PreTokenizer {
 public:
  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    split_pieces(io, scratch,
                 [&](std::string_view text, bool origin, const Align* al, Pieces& out) {
                   size_t i = 0, n;
                   while (i < text.size()) {
                     char32_t c = utf8_decode(text, i, &n);
                     int kind = is_word_char(c) ? 1 : is_whitespace(c) ? 0 : 2;
                     size_t b = i;
                     i += n;
                     if (kind == 0) continue;
                     while (i < text.size()) {
                       char32_t d = utf8_decode(text, i, &n);
                       int k2 = is_word_char(d) ? 1 : is_whitespace(d) ? 0 : 2;
                       if (k2 != kind) break;
                       i += n;
                     }
                     out.add(text.substr(b, i - b), -1, origin && b == 0, al ? al + b : nullptr);
                   }
                 });
  }
};

class SequencePre : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void pre_tokenize(Pieces& io, Pieces& scratch) const override {
    for (const auto& s : steps_) s->pre_tokenize(io, scratch);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& spec, const LoadContext& ctx,
                                                 const std::string& place) {
  if (spec.is_null()) return nullptr;
  std::string type = ctx.type(spec, place);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(ctx.bool_or(spec, place, "add_prefix_space", true),
                                       ctx.bool_or(spec, place, "use_regex", true));
  if (type == "Split")
    return std::make_unique<Split>(
        Pattern(ctx.field(spec, place, "pattern"), ctx, place + ".pattern"),
        parse_behavior(ctx.string(spec, place, "behavior"), ctx, place + ".behavior"),
        ctx.bool_or(spec, place, "invert", false));
  if (type == "Metaspace") {
    std::string rep = ctx.string_or(spec, place, "replacement", "\xE2\x96\x81");
    size_t n = 0;
    if (rep.empty() || (utf8_decode(rep, 0, &n), n != rep.size()))
      ctx.fail(place + ".replacement", "expected exactly one character");
    PrependScheme scheme = PrependScheme::kAlways;
    std::string s = ctx.string_or(spec, place, "prepend_scheme", "");
    if (s.empty())
      scheme = ctx.bool_or(spec, place, "add_prefix_space", true) ? PrependScheme::kAlways
                                                                  : PrependScheme::kNever;
    else if (s == "always")
      scheme = PrependScheme::kAlways;
    else if (s == "first")
      scheme = PrependScheme::kFirst;
    else if (s == "never")
      scheme = PrependScheme::kNever;
    else
      ctx.fail(place + ".prepend_scheme", "unknown prepend_scheme '" + s + "'",
               "use always, first or never");
    return std::make_unique<Metaspace>(rep, scheme, ctx.bool_or(spec, place, "split", true));
  }
  if (type == "Digits")
    return char_split([](char32_t c) { return is_numeric(c); },
                      ctx.bool_or(spec, place, "individual_digits", false)
                          ? SplitBehavior::kIsolated
                          : SplitBehavior::kContiguous);
  if (type == "Punctuation")
    return char_split([](char32_t c) { return is_punctuation(c); },
                      parse_behavior(ctx.string_or(spec, place, "behavior", "Isolated"), ctx,
                                     place + ".behavior"));
  if (type == "WhitespaceSplit")
    return char_split([](char32_t c) { return is_whitespace(c); }, SplitBehavior::kRemoved);
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "Sequence") {
    const Json& list = ctx.field(spec, place, "pretokenizers");
    if (!list.is_array()) ctx.fail(place + ".pretokenizers", "expected an array");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step =
          make_pre_tokenizer(list[i], ctx, place + ".pretokenizers[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePre>(std::move(steps));
  }
  ctx.fail(place + ".type", "unsupported pre-tokenizer '" + type + "'",
           "supported: ByteLevel, Split, Metaspace, Digits, Punctuation, Whitespace, "
           "WhitespaceSplit, Sequence");
}

}  // namespace sft::text
