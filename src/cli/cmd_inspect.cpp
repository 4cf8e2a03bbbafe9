// `sft inspect PATH_OR_ID [--json]`: a model's architecture, parameter counts (as
// transformers' num_parameters), on-disk dtypes, tokenizer files, and the memory a full
// fine-tune needs — a planning aid before committing to a run.
#include <cstdio>
#include <sstream>

#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "io/json.h"
#include "model/model_summary.h"

namespace sft::cli {

namespace {

constexpr const char* kUsage =
    "usage: sft inspect MODEL [--json]\n\n"
    "MODEL is a folder with config.json and *.safetensors, or a Hub id (e.g. Qwen/Qwen3-0.6B)\n"
    "found in the HF cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub).\n";

// 1234567 → "1,234,567"
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

Json memory_json(const FullFinetuneMemory& m) {
  return {{"compute_weights_bytes", m.compute_weights},
          {"master_weights_bytes", m.master_weights},
          {"gradient_bytes", m.gradients},
          {"adam_moment_bytes", m.adam_moments},
          {"total_bytes", m.total()}};
}

Json to_json(const ModelSummary& s) {
  const ModelConfig& c = s.dir.config;
  Json disk = Json::object();
  for (const auto& [dtype, st] : s.on_disk) {
    disk[dtype] = {{"tensors", st.tensors}, {"elements", st.elements}, {"bytes", st.bytes}};
  }
  return {
      {"path", s.dir.path},
      {"model_type", model_type_name(c.model_type)},
      {"architectures", c.architectures},
      {"num_hidden_layers", c.num_hidden_layers},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"rope_type", rope_type_name(c.rope.type)},
      {"rope_theta", c.rope.theta},
      {"sliding_window", c.sliding_window ? Json(*c.sliding_window) : Json(nullptr)},
      {"num_parameters", s.counts.total},
      {"num_parameters_exclude_embeddings", s.counts.total - s.counts.embeddings},
      {"embedding_parameters", s.counts.embeddings},
      {"lm_head_parameters", s.counts.lm_head},
      {"parameters_per_layer", s.counts.per_layer},
      {"stored_elements", s.stored_elements},
      {"other_parts_tensors", s.other_parts.size()},
      {"other_parts_elements", s.other_parts_elements},
      {"weight_files", s.weight_files},
      {"dtypes_on_disk", disk},
      {"experts_mxfp4", c.experts_mxfp4},
      {"checkpoint_matches_config", s.mismatch.ok()},
      {"missing_tensors", s.mismatch.missing},
      {"unexpected_tensors", s.mismatch.unexpected},
      {"wrong_shape_tensors", s.mismatch.wrong_shape},
      {"tokenizer_files", s.tokenizer_files},
      {"full_finetune_memory",
       {{"bf16", memory_json(full_finetune_memory(s.counts.total, true))},
        {"fp32", memory_json(full_finetune_memory(s.counts.total, false))}}},
  };
}

std::string to_text(const ModelSummary& s) {
  const ModelConfig& c = s.dir.config;
  const ParamCounts& n = s.counts;
  std::ostringstream o;
  auto pct = [&](int64_t part) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%",
                  n.total ? 100.0 * static_cast<double>(part) / static_cast<double>(n.total) : 0.0);
    return std::string(buf);
  };
  o << "model         " << s.dir.name_or_path;
  if (s.dir.path != s.dir.name_or_path) o << " → " << s.dir.path;
  o << "\narchitecture  " << model_type_name(c.model_type);
  if (!c.architectures.empty()) o << " (" << join(c.architectures, ", ") << ")";
  o << "\n              " << c.num_hidden_layers << " layers · hidden " << c.hidden_size
    << " · intermediate " << c.intermediate_size << " · heads " << c.num_attention_heads << " (kv "
    << c.num_key_value_heads << ", head_dim " << c.head_dim << ") · vocab " << grouped(c.vocab_size)
    << "\n              rope " << rope_type_name(c.rope.type) << " θ=" << c.rope.theta;
  if (c.rope.type != RopeType::kDefault) o << " factor " << c.rope.factor;
  o << " · max positions " << grouped(c.max_position_embeddings) << " · rms_norm_eps "
    << c.rms_norm_eps << " · " << c.hidden_act << "\n              tied embeddings "
    << (c.tie_word_embeddings ? "yes" : "no") << " · q/k/v bias " << (c.qkv_bias ? "yes" : "no")
    << " · q/k norm " << (c.qk_norm ? "yes" : "no") << " · sliding window "
    << (c.sliding_window ? std::to_string(*c.sliding_window) : std::string("none")) << "\n";
  o << "parameters    " << grouped(n.total) << " (as transformers' num_parameters)\n"
    << "              embeddings " << grouped(n.embeddings) << " (" << pct(n.embeddings) << ") · "
    << c.num_hidden_layers << " layers × " << grouped(n.per_layer) << " ("
    << pct(n.per_layer * c.num_hidden_layers) << ") · final norm " << grouped(n.final_norm)
    << " · lm_head "
    << (c.tie_word_embeddings ? std::string("tied")
                              : grouped(n.lm_head) + " (" + pct(n.lm_head) + ")")
    << "\n"
    << "              without embeddings " << grouped(n.total - n.embeddings) << "\n";
  o << "weights       " << s.weight_files.size()
    << (s.weight_files.size() == 1 ? " file" : " files") << ": " << join(s.weight_files, ", ")
    << "\n";
  for (const auto& [dtype, st] : s.on_disk) {
    o << "              " << dtype << ": " << st.tensors << " tensors, " << grouped(st.elements)
      << " elements, " << human_bytes(st.bytes) << "\n";
  }
  if (c.experts_mxfp4)
    o << "              the experts' U8 tensors are MXFP4 blocks and scales, dequantized at load "
         "(fp32 in memory, as counted below)\n";
  if (!s.other_parts.empty())
    o << "              a multimodal folder: the text model above, beside " << s.other_parts.size()
      << " tensors (" << grouped(s.other_parts_elements)
      << " elements) of other parts (vision tower, projector), which training leaves unchanged "
         "and the export copies\n";
  if (s.mismatch.ok()) {
    o << "              every tensor matches the config\n";
  } else {
    for (const std::string& m : s.mismatch.missing) o << "              MISSING " << m << "\n";
    for (const std::string& m : s.mismatch.unexpected)
      o << "              UNEXPECTED " << m << "\n";
    for (const std::string& m : s.mismatch.wrong_shape)
      o << "              WRONG SHAPE " << m << "\n";
  }
  o << "tokenizer     "
    << (s.tokenizer_files.empty() ? std::string("no tokenizer files")
                                  : join(s.tokenizer_files, ", "))
    << "\n";
  o << "memory        full fine-tune with AdamW, P = " << grouped(n.total)
    << " parameters, activations not included:\n";
  const FullFinetuneMemory bf16 = full_finetune_memory(n.total, true);
  const FullFinetuneMemory fp32 = full_finetune_memory(n.total, false);
  o << "              --bf16: bf16 weights 2P + fp32 master 4P + fp32 grads 4P + AdamW m,v 8P = 18 "
       "B × P = "
    << human_bytes(bf16.total()) << "\n"
    << "              fp32:   fp32 weights 4P + fp32 grads 4P + AdamW m,v 8P = 16 B × P = "
    << human_bytes(fp32.total()) << "\n";
  return o.str();
}

}  // namespace

int run_inspect(const Args& args) {
  bool json = false;
  OptionSet options("inspect");
  options.add_bool("json", &json, "output", "print the report as one JSON object");
  // A bare --json takes no value here, so `--json MODEL` keeps MODEL as the model.
  Args words = args;
  for (std::string& w : words)
    if (w == "--json") w = "--json=true";
  const std::optional<Args> positional =
      parse_command_line("inspect", kUsage, options, words, {1, 1, "one MODEL"});
  if (!positional) return 0;
  const std::string& model = positional->front();
  const ModelSummary summary = summarize_model(model);
  const std::string out = json ? to_json(summary).dump(2) + "\n" : to_text(summary);
  std::fputs(out.c_str(), stdout);
  return 0;
}

SFT_REGISTER_COMMAND(
    "inspect",
    "describe a model: architecture, parameter counts, dtypes, memory for a full fine-tune",
    run_inspect);

}  // namespace sft::cli
