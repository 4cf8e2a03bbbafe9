// Training checkpoint state: model (F32 master weights), optimizer moments and step,
// training_state.json, trainer_state.json; see train_checkpoint.h.
#include "train/train_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "model/moe_checkpoint.h"
#include "model/param_slices.h"
#include "model/text_model_names.h"
#include "train/adapter_io.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kComponent = "checkpoint";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kTrainingStateFile = "training_state.json";
constexpr const char* kFormat = "sft-adamw";
constexpr const char* kFormatVersion = "1";

[[noreturn]] void bad(const std::string& file, const std::string& place, const std::string& problem,
                      std::string_view hint =
                          "the checkpoint does not belong to this model; "
                          "resume with the model it was written for") {
  fail_in_file(kComponent, {file, place}, problem, hint);
}

// What the optimizer updates: all weights, or with LoRA the adapters (PEFT key names).
std::vector<NamedTensor> trained(const model::Transformer& m) {
  return m.trainable().named_values();
}

void check_moments_cover(AdamW& opt, const model::Transformer& m, const std::string& what) {
  const int64_t n = m.trainable().numel();
  if (opt.exp_avg().numel() != n || opt.exp_avg_sq().numel() != n)
    fail(kComponent, what + ": the optimizer holds " + std::to_string(opt.exp_avg().numel()) +
                         " moments for a model of " + std::to_string(n) + " trainable parameters");
}

// From the whole moments (opt), or a tensor at a time from the stream (ZeRO: the shard
// optimizer's options and step, every rank's moments).
void write_optimizer(const std::string& path, const model::Transformer& m, AdamW* opt,
                     ZeroTensorStream* stream, const AdamW& options_from) {
  if (opt) check_moments_cover(*opt, m, path);
  // Views into the flat moment arenas, which follow the model's parameter order (streamed:
  // headers only, the places kept for the fill).
  std::vector<NamedTensor> tensors;
  std::vector<size_t> begins;
  const std::byte* avg = opt ? opt->exp_avg().bytes() : nullptr;
  const std::byte* avg_sq = opt ? opt->exp_avg_sq().bytes() : nullptr;
  size_t offset = 0;
  for (const NamedTensor& p : trained(m)) {
    const Shape& s = p.tensor.shape();
    const std::byte* a = avg ? avg + offset : nullptr;
    const std::byte* b = avg_sq ? avg_sq + offset : nullptr;
    tensors.push_back({"exp_avg." + p.name, Tensor::borrow(DType::kF32, s, a, nullptr)});
    tensors.push_back({"exp_avg_sq." + p.name, Tensor::borrow(DType::kF32, s, b, nullptr)});
    begins.push_back(offset / sizeof(float));
    begins.push_back(offset / sizeof(float));
    offset += p.tensor.nbytes();
  }
  TensorFill fill;
  if (!opt)
    fill = [&](size_t i) {
      const size_t n = static_cast<size_t>(tensors[i].tensor.numel());
      const float* v = stream->moments(static_cast<int>(i % 2), begins[i], begins[i] + n);
      return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v), n * sizeof(float));
    };
  const AdamW& state = opt ? *opt : options_from;
  const AdamWOptions& o = state.options();
  write_safetensors(path, tensors,
                    {{"format", kFormat},
                     {"version", kFormatVersion},
                     {"step", std::to_string(state.steps_taken())},
                     {"beta1", Json(o.beta1).dump()},
                     {"beta2", Json(o.beta2).dump()},
                     {"eps", Json(o.eps).dump()},
                     {"weight_decay", Json(o.weight_decay).dump()}},
                    fill);
}

// `e` (a tensor of the file at `path`) after checking its dtype and (whole) shape. Messages
// name it as the file does (e.name), also where a view reads it under another name (Mixtral's
// w1 as gate_proj, ...).
const TensorEntry& checked_entry(const std::string& path, const TensorEntry& e,
                                 const Shape& shape) {
  if (e.dtype != DType::kF32)
    bad(path, "tensor '" + e.name + "'",
        "dtype " + std::string(dtype_name(e.dtype)) + ", expected F32",
        "checkpoint state is saved in F32; this file was not written by sft");
  if (e.shape != shape)
    bad(path, "tensor '" + e.name + "'",
        "shape " + shape_to_string(e.shape) + ", expected " + shape_to_string(shape));
  return e;
}

// The entry of a stored f32 tensor, after checking its name, dtype and (whole) shape.
const TensorEntry& checked_entry(const SafetensorsFile& file, const std::string& name,
                                 const Shape& shape) {
  const TensorEntry* e = file.find(name);
  if (!e) bad(file.path(), "tensor '" + name + "'", "missing");
  return checked_entry(file.path(), *e, shape);
}

// A checked moment waiting to be copied: nothing is restored until every tensor has passed.
// The copy reads the destination's block of the stored whole tensor (all of it unsplit).
struct PendingCopy {
  const SafetensorsFile* file;
  const TensorEntry* entry;
  const ParamSpec* spec;  // the destination's shape and tensor-parallel block
  float* dst;
};

// A moment's copy: under tensor parallelism the rank's block of the stored whole tensor.
void read_moment(const PendingCopy& c) {
  if (c.spec->tp_dim >= 0) return model::read_block(*c.file, *c.entry, *c.spec, c.dst);
  // Unsplit: the whole tensor, which may be 3-D (a stack of experts), past what block reads take.
  const std::span<const float> v = c.file->tensor(*c.entry).values<float>();
  std::copy(v.begin(), v.end(), c.dst);
}

std::vector<ParamSpec> specs_of(const model::ParameterSet& params) {
  std::vector<ParamSpec> out;
  for (const model::Parameter& p : params.all()) out.push_back(p.spec);
  return out;
}

// The trainable weights as the checkpoint stores them. A full model is in its family's form on
// disk (export_hf_model: a mixture of experts' stacks per expert, renamed or transposed), so it
// is read through the view and layout Transformer::load reads a model folder through
// (model/moe_checkpoint.h); a LoRA adapter holds the trainable parameters under their own names.
struct StoredWeights {
  SafetensorsCheckpoint ckpt;
  std::vector<ParamSpec> layout;        // what ckpt must hold, whole shapes
  const ModelConfig* family = nullptr;  // a full model's: the names on disk, for messages
};

StoredWeights stored_weights(SafetensorsCheckpoint stored, const model::Transformer& m) {
  // A multimodal model's checkpoint stores its text model as the source folder does.
  const model::TextModelNames names = model::text_model_names(stored);
  SafetensorsCheckpoint text = model::text_model_view(std::move(stored), names);
  if (m.lora()) return {std::move(text), specs_of(m.trainable())};
  SafetensorsCheckpoint ckpt = model::experts_view(std::move(text), m.config());
  std::vector<ParamSpec> layout = model::checkpoint_layout(specs_of(m.params()), ckpt, m.config());
  return {std::move(ckpt), std::move(layout), &m.config()};
}

// Every tensor of the stored layout present in F32 with its whole shape, and nothing else.
void check_weights(const StoredWeights& w) {
  std::set<std::string> expected;
  for (const ParamSpec& s : w.layout) {
    expected.insert(s.name);
    if (!w.ckpt.contains(s.name)) {
      const std::string stored = w.family ? model::name_on_disk(s.name, *w.family) : s.name;
      bad(w.ckpt.source(), "tensor '" + stored + "'", "missing");
    }
    checked_entry(w.ckpt.file_of(s.name).path(), w.ckpt.entry(s.name), s.whole_shape());
  }
  for (const std::string& name : w.ckpt.names())
    if (!expected.count(name))
      bad(w.ckpt.source(), "tensor '" + w.ckpt.entry(name).name + "'",
          "not a parameter of this model");
}

// The checked weights into the model (each rank its tensor-parallel blocks), the stacked
// experts converted back from their form on disk as at load.
void restore_weights(const StoredWeights& w, model::Transformer& m) {
  if (m.lora())
    model::load_parameter_slices(w.ckpt, m.trainable());
  else
    model::load_checkpoint_parameters(w.ckpt, m.params(), m.config());
}

int64_t parse_step(const SafetensorsFile& f) {
  const auto it = f.metadata().find("step");
  const auto format = f.metadata().find("format");
  if (format == f.metadata().end() || format->second != kFormat)
    bad(f.path(), "__metadata__", "not an sft optimizer state (format is not \"sft-adamw\")",
        "the file must be written by sft's write_training_checkpoint");
  const auto version = f.metadata().find("version");
  if (version == f.metadata().end() || version->second != kFormatVersion)
    bad(f.path(), "__metadata__", "unsupported optimizer state version",
        "this sft reads version " + std::string(kFormatVersion));
  try {
    size_t used = 0;
    const int64_t step = it == f.metadata().end() ? -1 : std::stoll(it->second, &used);
    if (step < 0 || used != it->second.size()) throw std::invalid_argument("step");
    return step;
  } catch (const std::exception&) {
    bad(f.path(), "__metadata__ 'step'", "missing or not a non-negative integer",
        "the file must be written by sft's write_training_checkpoint");
  }
}

// Part of a stored moment (elements [from, from + count) of its flat data) into a shard.
struct ShardCopy {
  const SafetensorsFile* file;
  const TensorEntry* entry;
  size_t from, count;
  float* dst;
};

// ZeRO: `opt` holds the moments of `shard` of the flat arena only; each stored moment (checked
// whole) gives its part inside the shard.
int64_t plan_optimizer_shard(const SafetensorsFile& f, const model::Transformer& m, AdamW& opt,
                             ShardRange shard, std::vector<ShardCopy>& copies) {
  if (opt.exp_avg().numel() != static_cast<int64_t>(shard.size()) ||
      shard.end > static_cast<size_t>(m.trainable().numel()))
    fail(kComponent, f.path() + ": a moment shard of " + std::to_string(shard.size()) +
                         " elements in an optimizer of " + std::to_string(opt.exp_avg().numel()));
  const int64_t step = parse_step(f);
  std::set<std::string> expected;
  float* avg = opt.exp_avg().mutable_values<float>().data();
  float* avg_sq = opt.exp_avg_sq().mutable_values<float>().data();
  for (const model::Parameter& p : m.trainable().all()) {
    const size_t begin = static_cast<size_t>(p.offset);
    const size_t lo = std::max(begin, shard.begin);
    const size_t hi = std::min(begin + static_cast<size_t>(p.value.numel()), shard.end);
    for (float* arena : {avg, avg_sq}) {
      const std::string name = (arena == avg ? "exp_avg." : "exp_avg_sq.") + p.spec.name;
      expected.insert(name);
      const TensorEntry& e = checked_entry(f, name, p.spec.whole_shape());
      if (lo < hi) copies.push_back({&f, &e, lo - begin, hi - lo, arena + (lo - shard.begin)});
    }
  }
  for (const TensorEntry& e : f.entries())
    if (!expected.count(e.name))
      bad(f.path(), "tensor '" + e.name + "'", "not a moment of this model");
  return step;
}

// Returns the step; the moments join `copies`.
int64_t plan_optimizer(const SafetensorsFile& f, const model::Transformer& m, AdamW& opt,
                       std::vector<PendingCopy>& copies) {
  check_moments_cover(opt, m, f.path());
  const int64_t step = parse_step(f);
  std::set<std::string> expected;
  // The flat moments follow the (local) parameters' order and offsets.
  float* avg = opt.exp_avg().mutable_values<float>().data();
  float* avg_sq = opt.exp_avg_sq().mutable_values<float>().data();
  for (const model::Parameter& p : m.trainable().all()) {
    for (float* arena : {avg, avg_sq}) {
      const std::string name = (arena == avg ? "exp_avg." : "exp_avg_sq.") + p.spec.name;
      expected.insert(name);
      copies.push_back(
          {&f, &checked_entry(f, name, p.spec.whole_shape()), &p.spec, arena + p.offset});
    }
  }
  for (const TensorEntry& e : f.entries())
    if (!expected.count(e.name))
      bad(f.path(), "tensor '" + e.name + "'", "not a moment of this model");
  return step;
}

}  // namespace

WholeTensor whole_from_stream(model::Transformer& model, ZeroTensorStream& stream) {
  const std::span<float> values = model.trainable().values();
  return [values, &stream](const Tensor& view) {
    const float* p = reinterpret_cast<const float*>(view.bytes());
    // Not in the trainable arena (a frozen base under LoRA): whole on every rank.
    if (p < values.data() || p >= values.data() + values.size()) return p;
    const size_t begin = static_cast<size_t>(p - values.data());
    return stream.weights(begin, begin + static_cast<size_t>(view.numel()));
  };
}

void write_training_checkpoint(const std::string& folder, const TrainingSnapshot& snapshot,
                               const ExportOptions& export_options, ZeroTensorStream* stream) {
  if (!snapshot.model) fail(kComponent, "write_training_checkpoint: no model");
  if (snapshot.model->tensor_parallel().on())
    fail(kComponent,
         "write_training_checkpoint: the model is one tensor-parallel rank's slice; the "
         "checkpoint holds the whole model (gather it and the moments with train/tp_gather.h "
         "and write from group rank 0)");
  ExportOptions o = export_options;
  o.dtype = DType::kF32;  // master weights: a resume must continue bit for bit
  const WholeTensor whole = stream ? whole_from_stream(*snapshot.model, *stream) : WholeTensor();
  // With LoRA a checkpoint holds the adapter (as TRL + PEFT save one), not the frozen base.
  if (snapshot.model->lora())
    export_peft_adapter(*snapshot.model, folder, o, whole);
  else
    export_hf_model(*snapshot.model, folder, o, whole);
  const fs::path dir(folder);
  try {
    if (snapshot.optimizer || (stream && stream->has_moments()))
      write_optimizer((dir / kOptimizerFile).string(), *snapshot.model, snapshot.optimizer, stream,
                      snapshot.optimizer ? *snapshot.optimizer : stream->optimizer());
    write_file_atomically((dir / kTrainingStateFile).string(),
                          snapshot.training_state.dump(2) + "\n");
    if (snapshot.trainer_state) save_trainer_state(*snapshot.trainer_state, folder);
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("[checkpoint]")) throw;
    fail(kComponent, "cannot write the training state into " + folder + ": " + e.what() +
                         " (hint: check that the folder is writable and the disk has space)");
  }
}

void read_training_checkpoint(const std::string& folder, TrainingSnapshot& snapshot,
                              std::optional<ShardRange> moment_shard) {
  if (!snapshot.model) fail(kComponent, "read_training_checkpoint: no model");
  if (!fs::is_directory(folder))
    fail_in_file(kComponent, {folder, ""}, "no such checkpoint folder",
                 "give a checkpoint-<step> folder written by sft");
  const fs::path dir(folder);
  // Every file is read and checked before anything is restored.
  const Json training_state = read_json_file((dir / kTrainingStateFile).string(), kComponent);
  std::optional<TrainerState> trainer_state;
  if (snapshot.trainer_state) trainer_state = load_trainer_state(folder);
  std::vector<PendingCopy> copies;
  std::vector<ShardCopy> shard_copies;
  const StoredWeights weights =
      stored_weights(snapshot.model->lora()
                         ? SafetensorsCheckpoint::open_file((dir / kAdapterWeightsFile).string())
                         : SafetensorsCheckpoint::open_dir(folder),
                     *snapshot.model);
  check_weights(weights);
  std::optional<SafetensorsFile> optimizer_file;
  int64_t step = 0;
  if (snapshot.optimizer) {
    const std::string path = (dir / kOptimizerFile).string();
    if (!fs::is_regular_file(path))
      fail_in_file(kComponent, {path, ""}, "missing",
                   "the checkpoint was saved without optimizer state; it cannot be resumed");
    optimizer_file = SafetensorsFile::open(path);
    step = moment_shard
               ? plan_optimizer_shard(*optimizer_file, *snapshot.model, *snapshot.optimizer,
                                      *moment_shard, shard_copies)
               : plan_optimizer(*optimizer_file, *snapshot.model, *snapshot.optimizer, copies);
  }

  // Each rank reads only its blocks of the mapped files.
  restore_weights(weights, *snapshot.model);
  for (const PendingCopy& c : copies) read_moment(c);
  for (const ShardCopy& c : shard_copies)
    std::memcpy(c.dst, c.file->tensor(*c.entry).values<float>().data() + c.from,
                c.count * sizeof(float));
  // bf16 compute multiplies copies of the master weights: they must follow the restored ones.
  model::ParameterSet& params = snapshot.model->trainable();
  if (params.has_bf16_copies()) params.refresh_bf16_copies();
  if (snapshot.optimizer) snapshot.optimizer->set_steps_taken(step);
  snapshot.training_state = training_state;
  if (trainer_state) *snapshot.trainer_state = *trainer_state;
}

}  // namespace sft
