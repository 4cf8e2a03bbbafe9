// See tokenizer.h. Loading (tokenizer.json → components) is here too: it is the one place
// that knows the file's top-level layout.
#include "text/tokenizer.h"

#include <filesystem>
#include <mutex>
#include <unordered_set>

#include "core/error.h"
#include "core/thread_pool.h"
#include "core/utf8.h"
#include "io/json.h"
#include "io/mapped_file.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/decoders.h"
#include "text/normalizers.h"
#include "text/post_processors.h"
#include "text/pre_tokenizers.h"
#include "text/unicode.h"

namespace sft::text {

namespace {
// Scratch for one encode call in flight.
struct EncodeState {
  Pieces pieces, scratch;
  std::string text;
  BpeScratch bpe;
};
}  // namespace

struct Tokenizer::Impl {
  std::string source;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<AddedVocabulary> added;
  bool split_special_tokens = false;

  mutable std::mutex pool_mutex;
  mutable std::vector<std::unique_ptr<EncodeState>> free_states;

  std::unique_ptr<EncodeState> acquire() const {
    std::lock_guard lock(pool_mutex);
    if (free_states.empty()) return std::make_unique<EncodeState>();
    auto s = std::move(free_states.back());
    free_states.pop_back();
    return s;
  }
  void release(std::unique_ptr<EncodeState> s) const {
    std::lock_guard lock(pool_mutex);
    free_states.push_back(std::move(s));
  }

  static void check_utf8(std::string_view text) {
    if (auto bad = find_invalid_utf8(text))
      fail("tokenizer", "input text is not valid UTF-8 (byte " + std::to_string(*bad) +
                            "); hint: tokenizers encode Unicode text only, decode the input "
                            "bytes first");
  }

  // The model-level ids of one sequence, without post-processing.
  void encode_sequence(std::string_view text, EncodeState& st, std::vector<int32_t>& out) const {
    check_utf8(text);
    added->extract_and_normalize(text, split_special_tokens, st.pieces, st.text);
    if (pre_tokenizer) pre_tokenizer->pre_tokenize(st.pieces, st.scratch);
    for (const auto& p : st.pieces.items) {
      if (p.token_id >= 0)
        out.push_back(p.token_id);
      else
        model->tokenize(st.pieces.view(p), st.bpe, out);
    }
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    file = (std::filesystem::path(path) / "tokenizer.json").string();
  if (!std::filesystem::exists(file, ec))
    fail("tokenizer", "no tokenizer.json at '" + path +
                          "' (hint: pass a model folder holding tokenizer.json, or the file)");
  return from_json(read_text_file(file, "tokenizer"), file);
}

namespace {
std::vector<AddedToken> load_added_tokens(const Json& root, const BpeModel& model,
                                          const LoadContext& ctx) {
  std::vector<AddedToken> tokens;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return tokens;
  if (!it->is_array()) ctx.fail("added_tokens", "expected an array");
  std::unordered_set<std::string> seen;
  std::unordered_set<int32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    std::string place = "added_tokens[" + std::to_string(i) + "]";
    AddedToken a;
    a.content = ctx.string(t, place, "content");
    int64_t id = ctx.int_or(t, place, "id", -1);
    if (id < 0 || id >= (int64_t(1) << 24))
      ctx.fail(place + ".id", "expected an id from 0 to 2^24", "token ids must be dense");
    a.special = ctx.bool_or(t, place, "special", false);
    a.single_word = ctx.bool_or(t, place, "single_word", false);
    a.lstrip = ctx.bool_or(t, place, "lstrip", false);
    a.rstrip = ctx.bool_or(t, place, "rstrip", false);
    a.normalized = ctx.bool_or(t, place, "normalized", !a.special);
    if (a.content.empty() || !seen.insert(a.content).second) continue;  // HF ignores these
    // HF keeps the model's id for a token already in the vocab.
    int32_t model_id = model.token_to_id(a.content);
    a.id = model_id >= 0 ? model_id : static_cast<int32_t>(id);
    if (!ids.insert(a.id).second)
      ctx.fail(place + ".id", "id " + std::to_string(a.id) + " is used by two added tokens",
               "every added token needs its own id");
    if (model_id < 0 && model.has_id(a.id))
      ctx.fail(place + ".id",
               "id " + std::to_string(a.id) + " of '" + a.content + "' belongs to vocab token '" +
                   std::string(model.id_to_token(a.id)) + "'",
               "added tokens not in the vocab need ids of their own");
    tokens.push_back(std::move(a));
  }
  return tokens;
}

const Json& component(const Json& root, const char* key) {
  static const Json null_json;
  auto it = root.find(key);
  return it == root.end() ? null_json : *it;
}
}  // namespace

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& source) {
  LoadContext ctx{source};
  TokenizerJson data = read_tokenizer_json(json_text, source);
  const Json& root = data.root;
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->normalizer = make_normalizer(component(root, "normalizer"), ctx, "normalizer");
  impl->pre_tokenizer = make_pre_tokenizer(component(root, "pre_tokenizer"), ctx, "pre_tokenizer");
  impl->model = std::make_unique<BpeModel>(ctx.field(root, "", "model"), data, ctx);
  impl->post_processor =
      make_post_processor(component(root, "post_processor"), ctx, "post_processor");
  impl->decoder = make_decoder(component(root, "decoder"), ctx, "decoder");
  impl->added = std::make_unique<AddedVocabulary>(load_added_tokens(root, *impl->model, ctx),
                                                  impl->normalizer.get());
  return Tokenizer(std::move(impl));
}

void Tokenizer::encode_into(std::string_view text, bool add_special_tokens,
                            std::vector<int32_t>& out) const {
  out.clear();
  auto st = impl_->acquire();
  try {
    impl_->encode_sequence(text, *st, out);
  } catch (...) {
    impl_->release(std::move(st));
    throw;
  }
  impl_->release(std::move(st));
  if (add_special_tokens && impl_->post_processor) impl_->post_processor->process(out, nullptr);
}

Encoding Tokenizer::encode_with_offsets(std::string_view text, bool add_special_tokens) const {
  Impl::check_utf8(text);
  // Fresh state (not the pool): tracking turns on alignment bookkeeping in every stage.
  EncodeState st;
  st.pieces.track = st.scratch.track = true;
  impl_->added->extract_and_normalize(text, impl_->split_special_tokens, st.pieces, st.text);
  if (impl_->pre_tokenizer) impl_->pre_tokenizer->pre_tokenize(st.pieces, st.scratch);
  OffsetEncoding e;
  e.input = text;
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  for (const auto& p : st.pieces.items) {
    if (p.token_id >= 0) {
      e.ids.push_back(p.token_id);
      e.offsets.push_back({p.begin, p.end});
      // HF's token string is the matched text (stripped whitespace included).
      e.tokens.push_back(text.substr(p.begin, p.end - p.begin));
      continue;
    }
    size_t first = e.ids.size();
    spans.clear();
    impl_->model->tokenize_with_spans(st.pieces.view(p), st.bpe, e.ids, spans);
    const Align* al = st.pieces.align_of(p);
    for (size_t i = 0; i < spans.size(); ++i) {
      // A token's range runs from its first byte's source to its last byte's.
      e.offsets.push_back({al[spans[i].first].begin, al[spans[i].second - 1].end});
      e.tokens.push_back(impl_->model->id_to_token(e.ids[first + i]));
    }
  }
  if (impl_->post_processor) impl_->post_processor->process_offsets(e, add_special_tokens);
  return {std::move(e.ids), std::move(e.offsets)};
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> out;
  encode_into(text, add_special_tokens, out);
  return out;
}

std::vector<int32_t> Tokenizer::encode_pair(std::string_view a, std::string_view b,
                                            bool add_special_tokens) const {
  std::vector<int32_t> ia = encode(a, false), ib = encode(b, false);
  bool merged =
      add_special_tokens && impl_->post_processor && impl_->post_processor->process(ia, &ib);
  if (!merged) ia.insert(ia.end(), ib.begin(), ib.end());
  return ia;
}

std::vector<std::vector<int32_t>> Tokenizer::encode_batch(std::span<const std::string> texts,
                                                          bool add_special_tokens,
                                                          ThreadPool* pool) const {
  std::vector<std::vector<int32_t>> out(texts.size());
  ThreadPool& p = pool ? *pool : default_thread_pool();
  p.parallel_for(texts.size(), [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) encode_into(texts[i], add_special_tokens, out[i]);
  });
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* a = impl_->added->find_by_id(id)) {
      if (!(skip_special_tokens && a->special)) tokens.push_back(a->decoded);
    } else if (impl_->model->has_id(id)) {
      tokens.emplace_back(impl_->model->id_to_token(id));
    }
  }
  if (!impl_->decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  impl_->decoder->decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

void Tokenizer::set_split_special_tokens(bool on) {
  impl_->split_special_tokens = on;
}
bool Tokenizer::split_special_tokens() const {
  return impl_->split_special_tokens;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* a = impl_->added->find_by_content(token)) return a->id;
  int32_t id = impl_->model->token_to_id(token);
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* a = impl_->added->find_by_id(id)) return a->decoded;
  if (impl_->model->has_id(id)) return std::string(impl_->model->id_to_token(id));
  return std::nullopt;
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* a = impl_->added->find_by_id(id);
  return a && a->special;
}

size_t Tokenizer::vocab_size() const {
  size_t n = impl_->model->vocab_size();
  for (const auto& a : impl_->added->tokens())
    if (!impl_->model->has_id(a.id)) ++n;
  return n;
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added->tokens();
}
const std::string& Tokenizer::source() const {
  return impl_->source;
}

std::optional<std::string> DecodeStream::step(int32_t id) {
  if (prefix_.empty() && !ids_.empty()) {
    std::string p = tokenizer_.decode(ids_, skip_special_);
    if (!(p.size() >= 3 && p.compare(p.size() - 3, 3, "\xEF\xBF\xBD") == 0)) {
      prefix_ = std::move(p);
      prefix_index_ = ids_.size();
    }
  }
  ids_.push_back(id);
  std::string text = tokenizer_.decode(ids_, skip_special_);
  bool incomplete = text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  if (text.size() <= prefix_.size() || incomplete) return std::nullopt;
  if (text.compare(0, prefix_.size(), prefix_) != 0)
    fail("tokenizer",
         "decode stream: the decoded prefix changed (the decoder is not "
         "prefix-stable for these ids)");
  std::string fresh = text.substr(prefix_.size());
  size_t keep_from = prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + long(keep_from));
  prefix_ = tokenizer_.decode(ids_, skip_special_);
  prefix_index_ = ids_.size();
  return fresh;
}

}  // namespace sft::text
