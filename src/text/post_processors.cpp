// See post_processors.h.
#include "text/post_processors.h"

#include <algorithm>

#include "text/unicode.h"

namespace sft::text {

namespace {

// HF's byte-level process_offsets: a token's leading/trailing spaces ('Ġ' or whitespace)
// are cut from its offsets, one input character per space (HF's offsets are characters by
// then), except the single space add_prefix_space put in front of the first token.
void trim_offsets(OffsetEncoding& e, bool add_prefix_space) {
  auto space = [](char32_t c) { return c == 0x120 || is_whitespace(c); };
  auto continuation = [&](size_t i) {
    return (static_cast<unsigned char>(e.input[i]) & 0xC0) == 0x80;
  };
  for (size_t i = 0; i < e.ids.size(); ++i) {
    std::string_view t = e.tokens[i];
    size_t leading = 0, trailing = 0, n = 0;
    for (size_t k = 0; k < t.size() && space(utf8_decode(t, k, &n)); k += n) ++leading;
    for (size_t k = t.size(); k > 0;) {
      size_t b = k - 1;
      while (b > 0 && (static_cast<unsigned char>(t[b]) & 0xC0) == 0x80) --b;
      if (!space(utf8_decode(t, b, &n))) break;
      ++trailing;
      k = b;
    }
    auto& [begin, end] = e.offsets[i];
    if (leading > 0) {
      bool first = i == 0 || begin == 0;
      if (first && add_prefix_space && leading == 1) leading = 0;
      // begin = min(begin + leading characters, end)
      for (size_t k = 0; k < leading && begin < end; ++k)
        for (++begin; begin < end && continuation(begin);) ++begin;
    }
    if (trailing > 0) {
      // end = max(end - trailing characters, begin), when `end` has that many before it
      size_t to = end, k = 0;
      for (; k < trailing && to > 0; ++k)
        for (--to; to > 0 && continuation(to);) --to;
      if (k == trailing) end = std::max(to, begin);
    }
  }
}

// One template item: a run of special ids, or sequence 0 (A) / 1 (B).
struct Item {
  int sequence = -1;
  std::vector<int32_t> ids;
};

class Template : public PostProcessor {
 public:
  // `trim` (RobertaProcessing's trim_offsets) trims before the special tokens go in.
  Template(std::vector<Item> single, std::vector<Item> pair, bool trim = false,
           bool add_prefix_space = false)
      : single_(std::move(single)),
        pair_(std::move(pair)),
        trim_(trim),
        add_prefix_space_(add_prefix_space) {}
  void process_offsets(OffsetEncoding& e, bool add_special_tokens) const override {
    if (trim_) trim_offsets(e, add_prefix_space_);
    if (!add_special_tokens) return;
    OffsetEncoding out;
    for (const auto& item : single_) {
      if (item.sequence == 0) {
        out.ids.insert(out.ids.end(), e.ids.begin(), e.ids.end());
        out.offsets.insert(out.offsets.end(), e.offsets.begin(), e.offsets.end());
        out.tokens.insert(out.tokens.end(), e.tokens.begin(), e.tokens.end());
      } else if (item.sequence < 0) {
        out.ids.insert(out.ids.end(), item.ids.begin(), item.ids.end());
        out.offsets.insert(out.offsets.end(), item.ids.size(), {0, 0});
        out.tokens.insert(out.tokens.end(), item.ids.size(), std::string_view());
      }
    }
    e = std::move(out);
  }
  bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const override {
    std::vector<int32_t> out;
    out.reserve(a.size() + (b ? b->size() : 0) + 8);
    for (const auto& item : b ? pair_ : single_) {
      if (item.sequence == 0)
        out.insert(out.end(), a.begin(), a.end());
      else if (item.sequence == 1 && b)
        out.insert(out.end(), b->begin(), b->end());
      else
        out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
    a.swap(out);
    return b != nullptr;
  }

 private:
  std::vector<Item> single_, pair_;
  bool trim_, add_prefix_space_;
};

// ByteLevel: ids unchanged; with trim_offsets it trims offsets.
class ByteLevelPost : public PostProcessor {
 public:
  ByteLevelPost(bool trim, bool add_prefix_space)
      : trim_(trim), add_prefix_space_(add_prefix_space) {}
  bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const override {
    (void)a;
    (void)b;
    return false;
  }
  void process_offsets(OffsetEncoding& e, bool add_special_tokens) const override {
    (void)add_special_tokens;
    if (trim_) trim_offsets(e, add_prefix_space_);
  }

 private:
  bool trim_, add_prefix_space_;
};

class SequencePost : public PostProcessor {
 public:
  explicit SequencePost(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const override {
    // Each processor sees the pair until one of them merges it.
    bool merged = false;
    for (const auto& s : steps_) merged |= s->process(a, merged ? nullptr : b);
    return merged;
  }
  void process_offsets(OffsetEncoding& e, bool add_special_tokens) const override {
    for (const auto& s : steps_) s->process_offsets(e, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

std::vector<Item> parse_template(const Json& list, const Json& specials, const LoadContext& ctx,
                                 const std::string& place) {
  if (!list.is_array()) ctx.fail(place, "expected an array of template items");
  std::vector<Item> items;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = place + "[" + std::to_string(i) + "]";
    const Json& it = list[i];
    if (it.is_object() && it.contains("Sequence")) {
      std::string id = ctx.string(it["Sequence"], where + ".Sequence", "id");
      if (id != "A" && id != "B") ctx.fail(where + ".Sequence.id", "expected \"A\" or \"B\"");
      items.push_back({id == "A" ? 0 : 1, {}});
    } else if (it.is_object() && it.contains("SpecialToken")) {
      std::string id = ctx.string(it["SpecialToken"], where + ".SpecialToken", "id");
      if (!specials.is_object() || !specials.contains(id))
        ctx.fail(where, "special token '" + id + "' is not in special_tokens",
                 "declare it in post_processor.special_tokens");
      const Json& ids = ctx.field(specials[id], place, "ids");
      Item item;
      for (const auto& v : ids) {
        if (!v.is_number_unsigned()) ctx.fail(where, "special token ids must be integers");
        item.ids.push_back(v.get<int32_t>());
      }
      items.push_back(std::move(item));
    } else {
      ctx.fail(where, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return items;
}

int32_t pair_id(const Json& spec, const LoadContext& ctx, const std::string& place,
                const char* key) {
  const Json& v = ctx.field(spec, place, key);
  if (!v.is_array() || v.size() != 2 || !v[1].is_number_unsigned())
    ctx.fail(place + "." + key, "expected [token, id]");
  return v[1].get<int32_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const LoadContext& ctx,
                                                   const std::string& place) {
  if (spec.is_null()) return nullptr;
  std::string type = ctx.type(spec, place);
  if (type == "TemplateProcessing") {
    const Json& specials =
        spec.contains("special_tokens") ? spec["special_tokens"] : Json::object();
    return std::make_unique<Template>(
        parse_template(ctx.field(spec, place, "single"), specials, ctx, place + ".single"),
        parse_template(ctx.field(spec, place, "pair"), specials, ctx, place + ".pair"));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    int32_t cls = pair_id(spec, ctx, place, "cls"), sep = pair_id(spec, ctx, place, "sep");
    std::vector<Item> single{{-1, {cls}}, {0, {}}, {-1, {sep}}};
    std::vector<Item> pair{{-1, {cls}}, {0, {}}, {-1, {sep}}};
    if (type == "RobertaProcessing") pair.push_back({-1, {sep}});
    pair.push_back({1, {}});
    pair.push_back({-1, {sep}});
    if (type == "BertProcessing") return std::make_unique<Template>(single, pair);
    return std::make_unique<Template>(single, pair, ctx.bool_or(spec, place, "trim_offsets", true),
                                      ctx.bool_or(spec, place, "add_prefix_space", true));
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPost>(ctx.bool_or(spec, place, "trim_offsets", true),
                                           ctx.bool_or(spec, place, "add_prefix_space", true));
  if (type == "Sequence") {
    const Json& list = ctx.field(spec, place, "processors");
    if (!list.is_array()) ctx.fail(place + ".processors", "expected an array");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step =
          make_post_processor(list[i], ctx, place + ".processors[" + std::to_string(i) + "]");
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<SequencePost>(std::move(steps));
  }
  ctx.fail(place + ".type", "unsupported post-processor '" + type + "'",
           "supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence");
}

}  // namespace sft::text
