// Post-processors (tokenizer.json "post_processor"): TemplateProcessing (single and pair
// templates), BertProcessing, RobertaProcessing, ByteLevel (ids unchanged: it only trims
// offsets) and Sequence. They add special tokens only when add_special_tokens is set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/load_context.h"

namespace sft::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites `a` into the final sequence; `b` is the second sequence of a pair or null.
  // Returns true when `b` was merged into `a` (otherwise the caller appends it).
  virtual bool process(std::vector<int32_t>& a, const std::vector<int32_t>* b) const = 0;
};

std::unique_ptr<PostProcessor> make_post_processor(const Json& spec, const LoadContext& ctx,
                                                   const std::string& place);

}  // namespace sft::text
