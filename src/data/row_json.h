// A dataset row's JSON value: keys keep the file's order (JSONL/JSON text order, Parquet
// schema field order), as in Python's dicts. Chat templates print tool schemas and tool-call
// arguments with tojson, so a row must reach chat::ChatInputs in its own key order to
// render as transformers/TRL render it. Everything that is not row data uses sft::Json.
#pragma once

#include "io/json.h"

namespace sft::data {

using RowJson = OrderedJson;

}  // namespace sft::data
