// Decoders (tokenizer.json "decoder"): ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace, Sequence. Like HF's decode_chain, each maps a list of token strings to a new
// list; the tokenizer joins the final list.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/json.h"
#include "text/load_context.h"

namespace sft::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

std::unique_ptr<Decoder> make_decoder(const Json& spec, const LoadContext& ctx,
                                      const std::string& place);

}  // namespace sft::text
