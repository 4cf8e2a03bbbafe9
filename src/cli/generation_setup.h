// What `sft generate` and `sft evaluate` share: a model folder's generation defaults, as
// transformers' generate() takes them (eos ids and sampling settings of generation_config.json,
// eos ids of config.json when there is none), and a conversation rendered into prompt ids the
// way apply_chat_template(add_generation_prompt=True, tokenize=True) produces them; and the
// device they run on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "model/config.h"
#include "model/generate.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace sft::cli {

// Eos ids and sampling defaults for the model in `model_dir` (whose parsed config is `config`).
model::GenerateOptions generation_defaults(const std::string& model_dir, const ModelConfig& config);

// Renders `inputs` (add_generation_prompt set by the caller) and tokenizes the text without
// special tokens: the template writes them itself.
std::vector<int64_t> chat_prompt_ids(const text::Tokenizer& tokenizer,
                                     const chat::ChatTemplate& chat_template,
                                     const chat::ChatInputs& inputs);

// Moves `model` to the device sft train would choose (train/device_choice.h: a visible GPU in a
// CUDA build unless --use_cpu), logging the choice in a CUDA build. A 4-bit (QLoRA) base
// stays on the CPU, saying so (its matmul has no CUDA kernel yet).
void place_model(model::Transformer& model, bool use_cpu);

}  // namespace sft::cli
