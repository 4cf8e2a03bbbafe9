// See post_processors.h.
#include "text/post_processors.h"

namespace sft::text {

namespace {

// One template item: a run of special ids, or sequence 0 (A) / 1 (B).
struct Item {
  int sequence = -1;
  std::vector<int32_t> ids;
};

class Template : public PostProcessor {
 public:
  Template(std::vector<Item> single, std::vector<Item> pair)
      : single_(std::move(single)), pair_(std::move(pair)) {}
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
};

class Identity : public PostProcessor {
 public:
  bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const override {
    (void)a;
    (void)b;
    return false;
  }
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
    return std::make_unique<Template>(single, pair);
  }
  if (type == "ByteLevel") return std::make_unique<Identity>();
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
