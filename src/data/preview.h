// A prepared row as text with its trained tokens marked, for `sft prepare --preview`: runs of
// trained tokens (labels != -100) are wrapped in ANSI green on a terminal, in [[ ]] otherwise,
// so what the model learns from is visible at a glance.
#pragma once

#include <string>

#include "data/pack.h"
#include "text/tokenizer.h"

namespace sft::data {

std::string render_trained_spans(const text::Tokenizer& tokenizer, const TokenRow& row, bool ansi);

}  // namespace sft::data
