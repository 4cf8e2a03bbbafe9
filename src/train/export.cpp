// export_hf_model: the HF model folder (weights, configs, tokenizer files); see export.h.
// verify_export is in export_verify.cpp.
#include "train/export.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/model_dir.h"
#include "model/moe_checkpoint.h"
#include "model/text_model_names.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"
#include "train/adapter_io.h"
#include "train/args.h"
#include "train/export_json.h"
#include "train/moe_args.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kComponent = "export";

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(kComponent, "cannot read " + path + ": " + errno_text(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(kComponent, "cannot read " + path + ": " + errno_text(errno));
  return ss.str();
}

// Writes one file of the export; a failure names the folder and says what to check.
void write_output(const std::string& out_dir, const std::string& name, std::string_view content) {
  try {
    write_file_atomically((fs::path(out_dir) / name).string(), content);
  } catch (const Error& e) {
    fail(kComponent, "cannot write " + name + " into " + out_dir + ": " + e.what() +
                         " (hint: check that the folder is writable and the disk has space)");
  }
}

// Token strings → ids through the tokenizer's vocabulary (added tokens included), as TRL's
// `eos_token not in tokenizer.get_vocab()` check does.
struct TokenChoice {
  export_json::TokenStrings strings;
  export_json::TokenIds ids;
};

// The source tokenizer_config.json, when options.tokenizer_dir has one.
std::optional<Json> read_tokenizer_config(const ExportOptions& o) {
  const fs::path path = fs::path(o.tokenizer_dir) / "tokenizer_config.json";
  if (o.tokenizer_dir.empty() || !fs::is_regular_file(path)) return std::nullopt;
  return read_json_file(path.string(), kComponent);
}

TokenChoice resolve_tokens(const ExportOptions& o, const Json* tokenizer_config) {
  TokenChoice c;
  if (o.tokenizer_dir.empty()) {
    if (o.eos_token || o.pad_token)
      fail(kComponent, "--eos_token / --pad_token need a tokenizer folder to look the ids up");
    return c;
  }
  const std::string tokenizer_json = (fs::path(o.tokenizer_dir) / "tokenizer.json").string();
  if (!fs::is_regular_file(tokenizer_json)) {
    if (o.eos_token || o.pad_token)
      fail(kComponent, tokenizer_json + " is missing: --eos_token / --pad_token need it");
    return c;
  }
  std::optional<std::string> eos = o.eos_token, pad = o.pad_token;
  if (tokenizer_config) {
    const text::TokenizerConfig tc = text::TokenizerConfig::from_json(
        *tokenizer_config, (fs::path(o.tokenizer_dir) / "tokenizer_config.json").string());
    // TRL: pad = --pad_token or the tokenizer's pad or its (possibly new) eos.
    if (!pad) pad = tc.pad_token ? tc.pad_token : (eos ? eos : tc.eos_token);
  } else if (!pad) {
    pad = eos;
  }
  if (!eos && !pad) return c;
  const text::Tokenizer tok = text::Tokenizer::from_file(tokenizer_json);
  auto id_of = [&](const std::string& token, const char* flag) {
    const std::optional<int32_t> id = tok.token_to_id(token);
    if (!id)
      fail(kComponent, std::string(flag) + " '" + token + "' is not in the vocabulary of " +
                           tokenizer_json + " (hint: use a token the tokenizer has)");
    return static_cast<int64_t>(*id);
  };
  if (eos) {
    c.strings.eos = eos;
    c.ids.eos = id_of(*eos, "--eos_token");
  }
  if (pad) {
    c.strings.pad = pad;
    c.ids.pad = id_of(*pad, "--pad_token");
  }
  return c;
}

// --chat_template_path: a template file, or a folder with chat_template.jinja or a string
// template in its tokenizer_config.json.
std::string read_chat_template(const std::string& path) {
  if (fs::is_regular_file(path)) return read_whole_file(path);
  if (fs::is_directory(path)) {
    const fs::path jinja = fs::path(path) / "chat_template.jinja";
    if (fs::is_regular_file(jinja)) return read_whole_file(jinja.string());
    const fs::path tc = fs::path(path) / "tokenizer_config.json";
    if (fs::is_regular_file(tc)) {
      const Json j = read_json_file(tc.string(), kComponent);
      if (j.contains("chat_template") && j["chat_template"].is_string())
        return j["chat_template"].get<std::string>();
    }
  }
  fail(kComponent, "--chat_template_path " + path +
                       ": no template there (hint: give a .jinja file or a tokenizer folder "
                       "with chat_template.jinja)");
}

// Weight files of an earlier export that this one did not rewrite (e.g. a stale index next
// to a new single file would be read instead of it).
void remove_stale_weights(const std::string& out_dir, const std::vector<std::string>& written) {
  const std::set<std::string> keep(written.begin(), written.end());
  for (const fs::directory_entry& e : fs::directory_iterator(out_dir)) {
    const std::string name = e.path().filename().string();
    const bool weight = name.rfind("model", 0) == 0 &&
                        (name.ends_with(".safetensors") || name == "model.safetensors.index.json");
    if (weight && !keep.count(name)) {
      std::error_code ec;
      fs::remove(e.path(), ec);
      if (ec) fail(kComponent, "cannot remove stale " + e.path().string() + ": " + ec.message());
    }
  }
}

// A source config.json that does not describe the model (other sizes, tied-ness) would give
// a folder that does not load; better to fail before writing it.
void check_config_describes_model(const Json& config, const model::Transformer& model) {
  const std::vector<ParamSpec> layout =
      parameter_layout(parse_model_config(config, "the exported config.json"));
  bool same = layout.size() == model.layout().size();
  for (size_t i = 0; same && i < layout.size(); ++i)
    same = layout[i].name == model.layout()[i].name && layout[i].shape == model.layout()[i].shape;
  if (!same)
    fail(kComponent,
         "the source config.json implies other parameters than the model has (hint: pass the "
         "folder the model was loaded from, or none to write the model's own config)");
}

void export_tokenizer_files(const std::string& out_dir, const ExportOptions& o,
                            const std::optional<Json>& tokenizer_config, const TokenChoice& tokens,
                            const std::optional<std::string>& template_text) {
  if (!o.tokenizer_dir.empty()) {
    for (const std::string& name : present_tokenizer_files(o.tokenizer_dir)) {
      const std::string src = (fs::path(o.tokenizer_dir) / name).string();
      if (name == "tokenizer_config.json") {
        const Json j = export_json::export_tokenizer_config(*tokenizer_config, tokens.strings,
                                                            template_text.has_value());
        write_output(out_dir, name, export_json::dump_like_python(j, false));
      } else if (name == "special_tokens_map.json") {
        const Json j =
            export_json::export_special_tokens_map(read_json_file(src, kComponent), tokens.strings);
        write_output(out_dir, name, export_json::dump_like_python(j, false));
      } else if (name == "chat_template.jinja" && template_text) {
        continue;  // replaced below
      } else {
        write_output(out_dir, name, read_whole_file(src));
      }
    }
  }
  if (template_text) write_output(out_dir, "chat_template.jinja", *template_text);
}

}  // namespace

ExportOptions export_options_from_args(const TrainingArgs& args, const std::string& model_dir,
                                       const std::string& tokenizer_dir) {
  ExportOptions o;
  o.source_model_dir = model_dir;
  o.tokenizer_dir = tokenizer_dir;
  o.eos_token = args.eos_token;
  o.pad_token = args.pad_token;
  o.chat_template_path = args.chat_template_path;
  o.max_shard_bytes = parse_size_bytes(args.max_shard_size);
  if (const fs::path config = fs::path(model_dir) / "config.json";
      !model_dir.empty() && fs::is_regular_file(config)) {
    const ModelConfig c = load_model_config(config.string());
    if (c.has_experts()) o.router_aux_loss_coef = router_aux_loss_coef(args, c);
  }
  const std::string& dtype = args.dtype;
  if (dtype == "auto") {
    const fs::path config = fs::path(model_dir) / "config.json";
    const std::optional<DType> saved = model_dir.empty() || !fs::is_regular_file(config)
                                           ? std::nullopt
                                           : load_model_config(config.string()).dtype;
    o.dtype = saved == DType::kBF16 || saved == DType::kF16 ? *saved : DType::kF32;
  } else if (dtype == "float32") {
    o.dtype = DType::kF32;
  } else if (dtype == "bfloat16") {
    o.dtype = DType::kBF16;
  } else if (dtype == "float16") {
    o.dtype = DType::kF16;
  } else {
    fail(kComponent, "--dtype " + dtype +
                         ": cannot save weights in it (hint: use auto, float32, bfloat16 or "
                         "float16)");
  }
  return o;
}

namespace {

// A multimodal source folder (model/text_model_names.h): the names its text model is stored
// under, and its other parts (vision tower, projector), which the export copies through in the
// saved dtype as save_pretrained writes the whole model. The checkpoint stays open: the other
// parts' tensors borrow from its mapping until they are written.
struct SourceParts {
  model::TextModelNames names;
  std::vector<std::string> others;
  std::optional<SafetensorsCheckpoint> checkpoint;
};

SourceParts source_parts(const std::string& source_dir) {
  SourceParts parts;
  const fs::path src(source_dir);
  if (source_dir.empty() || !(fs::is_regular_file(src / "model.safetensors") ||
                              fs::is_regular_file(src / "model.safetensors.index.json")))
    return parts;  // random init, or a source without weights: the text model's own names
  parts.checkpoint = SafetensorsCheckpoint::open_dir(source_dir);
  parts.names = model::text_model_names(*parts.checkpoint);
  parts.others = model::other_parts(*parts.checkpoint, parts.names);
  if (!parts.names.multimodal()) parts.checkpoint.reset();
  return parts;
}

// A tensor's name-free header part (dtype, shape) for a streamed write: no data.
Tensor header_only(DType dtype, const Tensor& t) {
  return Tensor::borrow(dtype, t.shape(), nullptr, nullptr);
}

}  // namespace

void export_hf_model(const model::Transformer& model, const std::string& out_dir,
                     const ExportOptions& options, const WholeTensor& whole) {
  // Read every source first, so a bad input fails before anything is written.
  Json config;
  Json generation_config;  // null when the source has none
  const fs::path src(options.source_model_dir);
  if (!options.source_model_dir.empty() && fs::is_regular_file(src / "config.json")) {
    config = read_json_file((src / "config.json").string(), kComponent);
    if (fs::is_regular_file(src / "generation_config.json"))
      generation_config = read_json_file((src / "generation_config.json").string(), kComponent);
  } else {
    config = model_config_to_json(model.config());
  }
  const std::optional<Json> tokenizer_config = read_tokenizer_config(options);
  const TokenChoice tokens =
      resolve_tokens(options, tokenizer_config ? &*tokenizer_config : nullptr);
  const int64_t V = model.config().vocab_size;
  for (const std::optional<int64_t>& id : {tokens.ids.eos, tokens.ids.pad})
    if (id && *id >= V)
      fail(kComponent, "token id " + std::to_string(*id) + " is outside the model's vocabulary (" +
                           std::to_string(V) +
                           ") (hint: the tokenizer and the model do not belong together)");

  Json out_config = export_json::export_config(config, options.dtype, tokens.ids);
  if (options.router_aux_loss_coef) {
    out_config["router_aux_loss_coef"] = *options.router_aux_loss_coef;
    out_config["output_router_logits"] = *options.router_aux_loss_coef != 0;
  }
  check_config_describes_model(out_config, model);
  const Json out_generation =
      export_json::export_generation_config(generation_config, config, tokens.ids);
  // The template goes to chat_template.jinja, as transformers 5's save_pretrained writes a
  // string template (dropping it from tokenizer_config.json): --chat_template_path's, else the
  // tokenizer folder's own (its chat_template.jinja, or the string in its config).
  std::optional<std::string> template_text;
  if (options.chat_template_path) {
    template_text = read_chat_template(*options.chat_template_path);
  } else if (!options.tokenizer_dir.empty() &&
             (fs::is_regular_file(fs::path(options.tokenizer_dir) / "chat_template.jinja") ||
              (tokenizer_config && tokenizer_config->contains("chat_template") &&
               (*tokenizer_config)["chat_template"].is_string()))) {
    template_text = read_chat_template(options.tokenizer_dir);
  }

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    fail(kComponent, "cannot create output folder " + out_dir + ": " + ec.message() +
                         " (hint: check the path and its permissions)");

  // Weights first and config.json last: a folder with a config is a complete one.
  const SourceParts source = source_parts(options.source_model_dir);
  // The header's names, dtypes and shapes; each tensor's bytes when the writer reaches it.
  std::vector<NamedTensor> weights;
  std::vector<Tensor> sources;
  for (const NamedTensor& p : model.parameters()) {
    weights.push_back({source.names.stored(p.name), header_only(options.dtype, p.tensor)});
    sources.push_back(p.tensor);
  }
  const size_t num_model = sources.size();
  for (const std::string& name : source.others) {
    sources.push_back(source.checkpoint->tensor(name));
    weights.push_back({name, header_only(options.dtype, sources.back())});
  }
  // A tensor stored in another arrangement than sft's (gpt-oss's experts) is converted again
  // from its parameter's gathered values: the copy parameters() made read this rank's shard.
  const std::vector<const model::Parameter*> from = model.converted_parameters();
  Tensor converted, rearranged;
  const TensorFill fill = [&](size_t i) {
    Tensor t = sources[i];
    if (whole && i < num_model && from[i]) {
      const model::Parameter& p = *from[i];
      const Tensor arena = Tensor::borrow(DType::kF32, p.spec.shape, p.value.as<float>(), nullptr);
      rearranged = model::on_disk_form(p.spec, whole(arena));
      t = rearranged;
    } else if (whole && i < num_model) {
      t = Tensor::borrow(DType::kF32, t.shape(), whole(sources[i]), nullptr);
    }
    if (t.dtype() == options.dtype) return t.byte_span();
    converted = t.to(options.dtype);
    return converted.byte_span();
  };
  std::vector<std::string> written;
  try {
    written = write_safetensors_sharded(out_dir, weights, options.max_shard_bytes,
                                        {{"format", "pt"}}, "model", fill);
  } catch (const Error& e) {
    fail(kComponent, "cannot write the weights into " + out_dir + ": " + e.what() +
                         " (hint: check that the folder is writable and the disk has space)");
  }
  remove_stale_weights(out_dir, written);
  export_tokenizer_files(out_dir, options, tokenizer_config, tokens, template_text);
  write_output(out_dir, "generation_config.json",
               export_json::dump_like_python(out_generation, true));
  write_output(out_dir, "config.json", export_json::dump_like_python(out_config, true));
}

void export_peft_adapter(const model::Transformer& model, const std::string& out_dir,
                         const ExportOptions& options, const WholeTensor& whole) {
  if (!model.lora()) fail(kComponent, "export_peft_adapter: the model has no LoRA adapters");
  const std::optional<Json> tokenizer_config = read_tokenizer_config(options);
  const TokenChoice tokens =
      resolve_tokens(options, tokenizer_config ? &*tokenizer_config : nullptr);
  std::optional<std::string> template_text;
  if (options.chat_template_path) template_text = read_chat_template(*options.chat_template_path);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    fail(kComponent, "cannot create output folder " + out_dir + ": " + ec.message() +
                         " (hint: check the path and its permissions)");
  try {
    const std::vector<NamedTensor> adapters = model.trainable().named_values();
    TensorFill fill;
    if (whole)
      fill = [&](size_t i) {
        const Tensor& t = adapters[i].tensor;
        return std::span<const std::byte>(reinterpret_cast<const std::byte*>(whole(t)), t.nbytes());
      };
    write_safetensors((fs::path(out_dir) / kAdapterWeightsFile).string(), adapters,
                      {{"format", "pt"}}, fill);
  } catch (const Error& e) {
    fail(kComponent, "cannot write the adapter into " + out_dir + ": " + e.what() +
                         " (hint: check that the folder is writable and the disk has space)");
  }
  export_tokenizer_files(out_dir, options, tokenizer_config, tokens, template_text);
  // The config last: a folder with adapter_config.json is a complete adapter.
  write_output(out_dir, kAdapterConfigFile,
               export_json::dump_like_python(adapter_config_json(*model.lora()), true));
}

void verify_adapter_export(const model::Transformer& model, const std::string& dir) {
  const SafetensorsFile f = SafetensorsFile::open((fs::path(dir) / kAdapterWeightsFile).string());
  for (const NamedTensor& p : model.trainable().named_values()) {
    const Tensor t = f.tensor(p.name);
    if (t.nbytes() != p.tensor.nbytes() ||
        std::memcmp(t.bytes(), p.tensor.bytes(), t.nbytes()) != 0)
      fail(kComponent, f.path() + ": tensor '" + p.name +
                           "' differs from the trained adapter after writing (hint: the disk "
                           "or another process changed the file)");
  }
}

}  // namespace sft
