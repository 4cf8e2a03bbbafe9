// Post-processors (tokenizer.json "post_processor"): TemplateProcessing (single and pair
// templates), BertProcessing, RobertaProcessing, ByteLevel (ids unchanged: it only trims
// offsets) and Sequence. They add special tokens only when add_special_tokens is set.
//
// With offsets (Tokenizer::encode_with_offsets, single sequences), added special tokens get
// (0, 0) and ByteLevel / RobertaProcessing with trim_offsets move token offsets past
// leading/trailing whitespace — even without add_special_tokens, as HF does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json.h"
#include "text/load_context.h"

namespace sft::text {

// One encoded sequence with offsets, as parallel arrays.
struct OffsetEncoding {
  std::vector<int32_t> ids;
  std::vector<std::pair<size_t, size_t>> offsets;  // [begin, end) input bytes
  std::vector<std::string_view> tokens;            // HF's token strings (what trimming reads)
  std::string_view input;                          // the encoded text
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites `a` into the final sequence; `b` is the second sequence of a pair or null.
  // Returns true when `b` was merged into `a` (otherwise the caller appends it).
  virtual bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const = 0;
  // The single-sequence pipeline with offsets; called whether or not special tokens are added.
  virtual void process_offsets(OffsetEncoding& e, bool add_special_tokens) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const LoadContext& ctx,
                                                   const std::string& place);

}  // namespace sft::text
