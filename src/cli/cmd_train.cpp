// `sft train`: TRL's `trl sft` — the same flags (train/args.h), the same training
// (train/trainer.h), an HF-format model folder at the end.
//
//   model      --model_name_or_path (folder or Hub-cache id), loaded in fp32; or with
//              --init_from_config its config.json only, weights drawn as transformers'
//              _init_weights does (N(0, initializer_range), norms 1, biases 0, the pad row of
//              the embedding 0), seeded by --seed
//   tokenizer  from the model folder; pad id = --pad_token, else the tokenizer's, else EOS
//   data       prepare_dataset (the audit is printed before training); eval rows from
//              --dataset_test_split, else a --eval_split_ratio hold-out of the prepared rows
//   output     checkpoints, metrics.jsonl, trainer_state.json, training_curves.svg, then
//              the final model (export_hf_model + verify_export), README.md (the model card);
//              with LoRA (--use_peft, or an adapter folder as the model) the PEFT adapter
//              instead of the model (export_peft_adapter)
//
// Before any work, train/preflight.h checks the flags against the file system (output_dir
// writable and empty unless --overwrite_output_dir or a resume, dataset and model found);
// notices for TRL flags without effect are printed first. A failed run that completed no
// checkpoint leaves output_dir as it found it. SIGINT/SIGTERM (SIGUSR1 from the
// --nproc_per_node launcher) end the current step, save and print the resume command as the
// run was launched. Under mpirun, checks every rank fails alike are printed once
// (train/agreed_failure.h), and log lines only by rank 0 (core/log.h).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <optional>

#include "cli/command_registry.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress_phase.h"
#include "core/rng.h"
#include "data/prepare.h"
#include "io/hub/upload.h"
#include "model/model_dir.h"
#include "model/text_model_names.h"
#include "model/transformer.h"
#include "ops/matmul_path.h"
#include "ops/profile.h"
#include "parallel/comm.h"
#include "parallel/groups.h"
#include "parallel/launch.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"
#include "train/adapter_io.h"
#include "train/agreed_failure.h"
#include "train/args.h"
#include "train/checkpoint_dir.h"
#include "train/data_options.h"
#include "train/device_choice.h"
#include "train/export.h"
#include "train/lora_options.h"
#include "train/model_card.h"
#include "train/moe_args.h"
#include "train/preflight.h"
#include "train/stop_signal.h"
#include "train/subset_dataset.h"
#include "train/tp_gather.h"
#include "train/trainer.h"

namespace sft::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: sft train --model_name_or_path MODEL --dataset_name DATA [--output_dir DIR] "
    "[options]\n"
    "       sft train --config run.yaml [options]\n\n"
    "Supervised fine-tuning with the flags of `trl sft` (TRL's SFTConfig, ModelConfig and\n"
    "ScriptArguments). Flags after --config override the YAML file.\n";

model::Transformer init_from_config(const ModelDir& dir, uint64_t seed,
                                    const model::TensorParallel& tp,
                                    const std::optional<model::Quant4Plan>& quant4,
                                    const model::FrozenBaseForm& form, model::ArenaShard shard) {
  const Json raw = read_json_file(dir.path + "/config.json", "train");
  const double std = raw.value("initializer_range", 0.02);
  // QLoRA: the 4-bit weights drawn and quantized one at a time, the matrices held in bf16
  // drawn a block at a time (never the fp32 model whole).
  model::Transformer m =
      quant4 ? model::Transformer::random_4bit(dir.config, seed, static_cast<float>(std), *quant4,
                                               form)
             : model::Transformer::random(dir.config, seed, static_cast<float>(std), tp, shard);
  // nn.Embedding(padding_idx=pad_token_id): _init_weights zeroes the pad row (on the rank
  // whose vocabulary slice holds it), in every form the table has; a ZeRO-3 shard only where it
  // holds that row.
  const model::Parameter& embed = m.params().at(ParamSlot::kEmbed);
  const int64_t first = embed.spec.tp_begin;
  if (dir.config.pad_token_id && *dir.config.pad_token_id >= first &&
      *dir.config.pad_token_id < first + embed.value.rows) {
    const int64_t row = *dir.config.pad_token_id - first, C = embed.value.cols;
    const model::ElementRun held = m.params().held_part(embed);
    const int64_t lo = std::max(row * C, held.begin), hi = std::min((row + 1) * C, held.end);
    for (const ops::View& table : {embed.value, embed.bf16})
      if (!table.empty() && lo < hi)
        ops::zero(table.row_range(row, 1).columns(lo - row * C, hi - lo));
  }
  return m;
}

// transformers' dtype for the weights of from_pretrained(dtype = --dtype): auto is the
// checkpoint's config.json dtype.
DType load_dtype(const std::string& dtype, const ModelConfig& config) {
  if (dtype == "bfloat16") return DType::kBF16;
  if (dtype == "float16") return DType::kF16;
  if (dtype == "auto") return config.dtype.value_or(DType::kF32);
  return DType::kF32;
}

// A LoRA base under --bf16 on the host holds its frozen matrices in bf16 as the reference
// computes with them (model/frozen_base.h); otherwise everything stays fp32.
model::FrozenBaseForm frozen_base_form(const TrainingArgs& args, bool lora,
                                       const ModelConfig& config,
                                       const std::optional<model::Quant4Plan>& quant4) {
  if (!lora || !args.bf16.value_or(false)) return {};
  return model::FrozenBaseForm::bf16(
      quant4 ? quant4->input_dtype : load_dtype(args.dtype, config),
      args.use_peft ? lora_config_from_args(args).modules_to_save : std::vector<std::string>{});
}

int64_t resolve_pad_id(const TrainingArgs& a, const text::Tokenizer& tok,
                       const std::optional<text::TokenizerConfig>& tc, int32_t eos_id) {
  std::optional<std::string> pad = a.pad_token;
  if (!pad && tc) pad = tc->pad_token;
  if (pad) {
    if (const auto id = tok.token_to_id(*pad)) return *id;
    if (a.pad_token)
      fail("train", "--pad_token '" + *a.pad_token +
                        "' is not in the tokenizer's vocabulary (hint: pick a token it has)");
  }
  return eos_id;
}

data::PrepareOptions prepare_options(const TrainingArgs& a, const std::string& tokenizer_dir,
                                     const std::string& split, bool packing) {
  data::PrepareOptions o = prepare_options_from_args(a, tokenizer_dir, default_token_cache_dir());
  o.split = split;
  o.packing = packing;
  return o;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\"'$\\*?;&|<>()") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command as it was launched (launch_words: under mpirun with its words, under
// --nproc_per_node with that flag), the user's flags, and the checkpoint to resume.
std::string resume_command(const Args& argv, const std::string& checkpoint) {
  std::string cmd;
  for (const std::string& w : launch_words("train", argv))
    cmd += (cmd.empty() ? "" : " ") + shell_quote(w);
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].rfind("--resume_from_checkpoint", 0) == 0) {
      if (argv[i].find('=') == std::string::npos) ++i;  // skip its value too
      continue;
    }
    cmd += " " + shell_quote(argv[i]);
  }
  return cmd + " --resume_from_checkpoint " + shell_quote(checkpoint);
}

// --log_level as TrainingArguments names the levels; passive keeps SFT_LOG_LEVEL.
void apply_log_level(const std::string& level) {
  if (level == "debug") set_log_level(LogLevel::kDebug);
  if (level == "info") set_log_level(LogLevel::kInfo);
  if (level == "warning") set_log_level(LogLevel::kWarn);
  if (level == "error" || level == "critical") set_log_level(LogLevel::kError);
}

int train_checked(const Args& argv, TrainingArgs& args, std::unique_ptr<Comm> world);

}  // namespace

namespace {

// --push_to_hub: the finished output_dir to --hub_model_id (io/hub/upload.h); by default a repo
// named like output_dir under the token's user, as transformers' Trainer does. With
// --hub_strategy every_save, each checkpoint's model files too (synchronously).
hub::UploadOptions push_options(const TrainingArgs& args) {
  hub::UploadOptions up;
  std::filesystem::path out = std::filesystem::path(args.output_dir).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();  // "dir/" → "dir"
  up.repo_id = args.hub_model_id.value_or(out.filename().string());
  up.private_repo = args.hub_private_repo;
  up.token = args.hub_token;
  return up;
}

void push_output_dir(const TrainingArgs& args) {
  hub::UploadOptions up = push_options(args);
  up.commit_message = "End of training";
  hub::push_folder(args.output_dir, up);
}

}  // namespace

int run_train(const Args& argv) {
  // The shared preamble's --help (cli/command_line.h); the flags themselves go through
  // parse_training_args, which also reads --config YAML files.
  TrainingArgs defaults;
  if (OptionSet options = training_options(defaults); options.asks_for_help(argv)) {
    std::fputs(kUsage, stdout);
    std::fputs(options.help().c_str(), stdout);
    return 0;
  }
  TrainingArgs args;
  OutputDirBefore before;
  std::unique_ptr<Comm> world;
  // What every process checks first: the flags, then the file system (preflight).
  auto checks = [&] {
    args = parse_training_args(argv);
    // First thing: the thread pool reads its size once, when it starts.
    if (args.num_threads) setenv("SFT_NUM_THREADS", std::to_string(*args.num_threads).c_str(), 1);
    apply_log_level(args.log_level);
    // The first lines: which device (rank 0's; each rank picks by its local rank), then the
    // flags' notices.
    const DeviceEnvironment env = device_environment();
    const DeviceChoice device = choose_device(env, args.use_cpu);
    if (launcher_world_rank() == 0) {
      for (const std::string& line : device_report(device, env)) log_info("[device] ", line);
      for (const std::string& notice : args.notices) log_info("[args] ", notice);
    }
    before = preflight_train(args);
  };
  if (!under_mpi_launcher()) {
    // --nproc_per_node N re-launches under mpirun first; every rank then runs the checks itself.
    args = parse_training_args(argv);
    if (args.num_threads) setenv("SFT_NUM_THREADS", std::to_string(*args.num_threads).c_str(), 1);
    if (args.nproc_per_node && *args.nproc_per_node > 1)
      return relaunch_under_mpirun(static_cast<int>(*args.nproc_per_node),
                                   without_nproc_flag(argv));
    checks();
  } else {
    // One world from the start, so that a failed check is reported once, not by every rank.
    world = make_comm_from_environment();
    set_log_rank(world->rank(), world->size());
    // The launcher's stop (SIGUSR1, forwarded by mpirun) may come before training starts.
    install_stop_signal_handlers();
    // The user's own mpirun: its SIGTERM (after a Ctrl-C) is followed by SIGKILL within 1 s.
    if (world->rank() == 0 && std::getenv("SFT_LAUNCHER_PID") == nullptr &&
        std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr)
      set_stop_signal_notice(
          SIGTERM,
          "[sft warn] SIGTERM: when mpirun sends it (after a Ctrl-C or SIGINT to it), "
          "it SIGKILLs every rank 1 s later (odls_base_sigkill_timeout), mostly before "
          "the checkpoint is saved (hint: stop with `kill -USR1 " +
              std::to_string(::getppid()) +
              "` (mpirun forwards SIGUSR1 and waits), or launch with sft train "
              "--nproc_per_node N, whose Ctrl-C does that)\n");
    // The checks are every rank's alike: a failure is printed once (train/agreed_failure.h).
    try {
      agree_on_failure({world.get()}, world->rank() == 0, checks);
    } catch (const AlreadyReported& e) {
      return e.exit_code();
    }
  }
  const bool first_rank = launcher_world_rank() == 0;  // the one that writes output_dir
  try {
    return train_checked(argv, args, std::move(world));
  } catch (const AlreadyReported& e) {  // a failure every rank had, printed once
    if (const int removed = first_rank ? restore_output_dir(before) : 0)
      log_info("[train] no checkpoint was completed: removed the ", removed,
               " entries this run created in ", args.output_dir);
    return e.exit_code();
  } catch (const std::filesystem::filesystem_error& e) {
    const int removed = first_rank ? restore_output_dir(before) : 0;
    fail("train",
         std::string("I/O error: ") + e.what() +
             (removed ? " (this run's partial outputs in " + args.output_dir + " were removed)"
                      : "") +
             " (hint: check free disk space and the permissions of " + args.output_dir + ")");
  } catch (const Error&) {
    if (const int removed = first_rank ? restore_output_dir(before) : 0)
      log_info("[train] no checkpoint was completed: removed the ", removed,
               " entries this run created in ", args.output_dir);
    throw;
  }
}

namespace {

// The ranks of the run and every point where they wait for each other (the only barriers of
// `sft train`; the trainer's collectives are its own).
struct Ranks {
  std::unique_ptr<Comm> world;
  ParallelGroups groups;  // groups.dp: the data-parallel group the trainer sums over
  model::TensorParallel tp;

  bool main() const { return world->rank() == 0; }
  // Every rank has checked output_dir (preflight) before rank 0 writes into it.
  void after_preflight() { world->barrier(); }
  // Rank 0 runs `fill` first (it fills the token cache); the others then run it and read the
  // cache instead of re-encoding.
  template <typename F>
  auto main_first(F&& fill) {
    if (!main()) world->barrier();
    auto result = fill();
    if (main()) world->barrier();
    return result;
  }
  // --ddp_timeout covers training, not data preparation (rank 0 may encode for long while the
  // others wait in main_first).
  void set_timeout(double seconds) {
    world->set_timeout(seconds);
    groups.dp->set_timeout(seconds);
    groups.tp->set_timeout(seconds);
    for (Comm* c : {groups.ep.get(), groups.expert_dp.get()})
      if (c) c->set_timeout(seconds);
  }
};

// Under mpirun every rank joins the world and trains in its data-parallel group
// (parallel/groups.h).
Ranks join_ranks(const TrainingArgs& args, std::unique_ptr<Comm> world) {
  Ranks r;
  r.world = world ? std::move(world) : make_comm_from_environment();
  r.groups = make_parallel_groups(*r.world, static_cast<int>(args.tp_size),
                                  static_cast<int>(args.ep_size));
  r.tp = model::TensorParallel::of(r.groups.tp_group.get());
  r.after_preflight();
  return r;
}

struct LoadedModel {
  ModelDir dir;                // the base model's folder
  model::Transformer model;    // with its LoRA adapters when it trains them
  std::string tokenizer_path;  // a folder
  text::Tokenizer tokenizer;
  std::optional<text::TokenizerConfig> tokenizer_config;
};

// The model (weights, init_from_config, or an adapter folder's base with its adapter), LoRA,
// the compute dtype, then the tokenizer.
// --zero_stage 3 over several data-parallel ranks: each rank reads or draws only its shard of
// the model (optim/zero3.h: the trainer gathers what a pass uses), so no rank ever holds the
// whole model. Not with LoRA: only the adapters are sharded, the frozen base stays whole.
model::ArenaShard zero3_load_shard(const TrainingArgs& args, const Ranks& ranks, bool lora) {
  if (args.zero_stage != 3 || lora || ranks.groups.dp->size() < 2) return {};
  return {ranks.groups.dp->rank(), ranks.groups.dp->size()};
}

LoadedModel load_model(const TrainingArgs& args, const Ranks& ranks) {
  // Feedback from the first second: each slow phase is named while it runs
  // (core/progress_phase.h).
  Phase phase(args.init_from_config ? "initialising weights from config.json" : "loading weights",
              ranks.main());
  // LoRA: an adapter folder as --model_name_or_path loads its base and continues training the
  // adapter; --use_peft on a base model starts fresh adapters (train/adapter_io.h).
  const bool from_adapter = is_adapter_dir(args.model_name_or_path);
  if (from_adapter && ranks.tp.on())
    fail("train", "--tp_size " + std::to_string(args.tp_size) + ": " + args.model_name_or_path +
                      " is a PEFT adapter, and LoRA is not split over tensor-parallel ranks "
                      "(hint: --tp_size 1)");
  if (from_adapter && ranks.groups.ep_group)
    fail("train", "--ep_size " + std::to_string(args.ep_size) + ": " + args.model_name_or_path +
                      " is a PEFT adapter, and expert parallelism does not compose with LoRA "
                      "yet (hint: --ep_size 1)");
  std::string base_path;
  std::optional<model::Transformer> loaded;
  // QLoRA: --load_in_4bit, or a base folder saved 4-bit (train/quant_args.h).
  const std::optional<model::Quant4Plan> quant4 = quant4_plan_for(
      args.quant, args.dtype, args.use_peft || from_adapter,
      from_adapter ? resolve_model_source(args.model_name_or_path, args.model_revision).model_dir
                   : open_model_dir(args.model_name_or_path, args.model_revision).path);
  if (from_adapter) {
    loaded.emplace(load_model_with_adapter(args.model_name_or_path, args.model_revision, &base_path,
                                           static_cast<uint64_t>(args.seed),
                                           quant4 ? &*quant4 : nullptr));
    if (args.use_peft && ranks.main())
      log_info("[train] ", args.model_name_or_path,
               " is a PEFT adapter: its adapter_config.json defines the adapter (the --lora_* "
               "flags are not used)");
  }
  ModelDir dir =
      open_model_dir(from_adapter ? base_path : args.model_name_or_path, args.model_revision);
  // TRL refuses a router_aux_loss_coef for a model without experts before training.
  router_aux_loss_coef(args, dir.config);
  check_expert_parallel(args, dir.config, dir.path + "/config.json");
  // PEFT's targets match the vision tower's projections too (q_proj, v_proj, ...; all-linear
  // every nn.Linear but the head), and it has no default targets for gemma3 or mistral3, so
  // its adapter for a multimodal folder has modules sft does not hold.
  if (args.use_peft && !from_adapter && !args.init_from_config &&
      model::is_multimodal_folder(dir.path))
    fail("train", "--use_peft: " + dir.path +
                      " is a multimodal model (its text model beside a vision tower), and "
                      "PEFT's target modules would also match its vision tower, which sft does "
                      "not load (hint: train it without --use_peft, or save its text model alone "
                      "with " +
                      dir.config.architectures.front() + " and train that folder with LoRA)");
  const model::FrozenBaseForm form =
      frozen_base_form(args, args.use_peft || from_adapter, dir.config, quant4);
  // A QLoRA base is read or drawn straight into that form (an adapter folder's base is
  // released into it below: its adapter_config.json's modules_to_save are not known here).
  const model::FrozenBaseForm& load_form = loaded ? model::FrozenBaseForm{} : form;
  const model::ArenaShard shard = zero3_load_shard(args, ranks, args.use_peft || from_adapter);
  model::Transformer model = loaded ? std::move(*loaded)
                             : args.init_from_config
                                 ? init_from_config(dir, static_cast<uint64_t>(args.seed), ranks.tp,
                                                    quant4, load_form, shard)
                             : quant4 ? model::Transformer::load_4bit(dir.path, *quant4, load_form)
                                      : model::Transformer::load(dir.path, ranks.tp, shard);
  if (args.use_peft && !from_adapter)
    model.enable_lora(lora_config_from_args(args), static_cast<uint64_t>(args.seed),
                      "--lora_target_modules");
  // --ep_size: each rank runs its group's share of the experts (model/expert_parallel.h).
  if (ranks.groups.ep_group) model.enable_expert_parallel(*ranks.groups.ep_group);
  // A GPU chosen (train/device_choice.h): the weights (and adapters: LoRA reads the base on the
  // host first) move there before bf16 compute makes its copies (train/device_step.h: what runs
  // there; the rest is refused naming it).
  if (const DeviceChoice device = choose_device(device_environment(), args.use_cpu);
      device.device == Device::kCuda) {
    cuda_init(device.gpu);
    model.to_device(Device::kCuda);
  }
  // TRL's bf16 (its default): bf16 matmuls with fp32 accumulation over fp32 master weights.
  if (args.bf16.value_or(false)) {
    // LoRA under bf16: the frozen base matmuls read only its bf16 copies, so its fp32 matrices
    // go as the copies are written. (Not on a device: the model comes back to the host after
    // training, which moves fp32 values.)
    if (model.lora() && model.device() == Device::kCpu)
      model.keep_frozen_base_in_bf16(form);
    else
      model.set_compute_dtype(DType::kBF16);
    if (launcher_world_rank() == 0 && model.device() == Device::kCpu) {
      log_info("[device] bf16 matmuls: ", ops::matmul_bf16_path());
      log_info("[device] bf16 attention: ", ops::attention_bf16_path());
    } else if (launcher_world_rank() == 0) {
      log_info("[device] bf16 matmuls: cuBLASLt");
    }
  }
  // Tokenizer files: the adapter folder's when it has them (TRL saves them there), else the
  // base model's.
  std::string tok_path = from_adapter && fs::exists(args.model_name_or_path + "/tokenizer.json")
                             ? args.model_name_or_path
                             : dir.path;
  text::Tokenizer tokenizer = text::Tokenizer::from_file(tok_path);
  std::optional<text::TokenizerConfig> tokenizer_config;
  if (fs::exists(tok_path + "/tokenizer_config.json"))
    tokenizer_config = text::TokenizerConfig::from_file(tok_path);
  phase.done();
  return {std::move(dir), std::move(model), std::move(tok_path), std::move(tokenizer),
          std::move(tokenizer_config)};
}

struct TrainData {
  std::shared_ptr<data::PreparedDataset> train, eval;  // eval: null without evaluation
};

// The train rows, and the eval rows from --dataset_test_split or a hold-out of the train rows.
TrainData prepare_data(const TrainingArgs& args, const std::string& tok_path, Ranks& ranks) {
  Phase phase("preparing data", ranks.main());
  TrainData d;
  d.train = ranks.main_first([&] {
    return data::prepare_dataset(
        prepare_options(args, tok_path, args.dataset_train_split, args.packing));
  });
  if (args.eval_strategy != "no") {
    data::PrepareOptions eo = prepare_options(args, tok_path, args.dataset_test_split,
                                              args.eval_packing.value_or(args.packing));
    // A --datasets mixture has only its train rows (as TRL's get_dataset without
    // test_split_size); eval then holds out --eval_split_ratio / --test_split_size.
    if (eo.mixture.empty() && data::find_split_files(eo.source, eo.split)) {
      d.eval = data::prepare_dataset(eo);
    } else if (args.eval_split_ratio > 0) {
      auto [train_part, eval_part] =
          split_dataset(d.train, args.eval_split_ratio, static_cast<uint64_t>(args.seed));
      d.train = train_part;
      d.eval = eval_part;
      log_info("[train] held out ", d.eval->num_rows(), " of ",
               d.train->num_rows() + d.eval->num_rows(), " prepared rows for evaluation");
    } else {
      fail("train", "--eval_strategy " + args.eval_strategy + ": the dataset has no '" +
                        args.dataset_test_split +
                        "' split (hint: --dataset_test_split NAME, --eval_split_ratio 0.05, or "
                        "--eval_strategy no)");
    }
  }
  phase.done();
  if (ranks.main()) std::fprintf(stderr, "%s\n", d.train->report().to_text().c_str());
  return d;
}

TrainerSetup trainer_setup(const TrainingArgs& args, LoadedModel& m, const TrainData& data,
                           const Ranks& ranks) {
  const std::optional<int32_t> eos = m.tokenizer.token_to_id(args.eos_token.value_or(
      m.tokenizer_config && m.tokenizer_config->eos_token ? *m.tokenizer_config->eos_token
                                                          : std::string()));
  TrainerSetup setup;
  setup.args = &args;
  setup.model = &m.model;
  setup.train = data.train.get();
  setup.eval = data.eval.get();
  setup.comm = ranks.groups.dp.get();
  setup.tp_comm = ranks.tp.on() ? ranks.groups.tp.get() : nullptr;
  setup.ep_comm = ranks.groups.ep.get();
  setup.expert_dp_comm = ranks.groups.expert_dp.get();
  setup.shuffle = args.train_sampling_strategy != "sequential";
  setup.stream_export = args.zero_stage == 3;  // the final model written a tensor at a time
  setup.batching.padding_free = args.padding_free || args.packing;
  setup.batching.pad_to_multiple_of = args.pad_to_multiple_of;
  setup.batching.pad_token_id =
      resolve_pad_id(args, m.tokenizer, m.tokenizer_config, eos.value_or(0));
  setup.eval_batching = setup.batching;
  setup.eval_batching.padding_free = args.padding_free || args.eval_packing.value_or(args.packing);
  // Checkpoints hold F32 master weights (write_training_checkpoint); the final export uses
  // --dtype.
  setup.export_options = export_options_from_args(args, m.dir.path, m.tokenizer_path);
  if (args.push_to_hub && args.hub_strategy == "every_save") {
    setup.on_checkpoint = [&args](const std::string& checkpoint, int64_t step) {
      hub::UploadOptions up = push_options(args);
      up.files = hub::checkpoint_model_files(checkpoint);
      up.commit_message = "Training in progress, step " + std::to_string(step);
      hub::push_folder(checkpoint, up);
    };
  }
  return setup;
}

using ShardedExport = std::function<void(const WholeTensor&, const TrainResult&)>;

// The training loop, with SIGINT/SIGTERM turned into a stop request while it runs. Under
// ZeRO-3 (setup.stream_export) `export_sharded` writes the final model while the trainer still
// holds the shards, each tensor gathered as it is written (Trainer::stream_model).
TrainResult run_trainer(const TrainerSetup& setup, const Ranks& ranks,
                        const ShardedExport& export_sharded, bool& exported) {
  install_stop_signal_handlers();
  TrainResult result;
  {
    auto phase = std::make_unique<Phase>("initialising the trainer", ranks.main());
    Trainer trainer(setup);
    phase.reset();  // its done line, before the trainer's first line
    result = trainer.train();
    uninstall_stop_signal_handlers();
    // SFT_PROFILE=1: where the training steps' time went, op by op (before export adds to it).
    if (ops::profiling() && ranks.main()) std::fputs(ops::op_profile_table().c_str(), stderr);
    exported = !result.interrupted && trainer.model_sharded();
    if (exported)
      trainer.stream_model([&](const WholeTensor& whole) { export_sharded(whole, result); });
  }
  return result;
}

// The final model (or PEFT adapter), its model card and the upload, from world rank 0. Under
// tensor parallelism the first data-parallel group's ranks first assemble the whole model.
// Under ZeRO-3 `sharded` brings each tensor whole as it is written (and the check that
// reloads the export and runs it is left out: no rank holds the whole model).
void export_outputs(const TrainingArgs& args, model::Transformer& model, const ExportOptions& ex,
                    const TrainResult& result, const Ranks& ranks,
                    const WholeTensor& sharded = {}) {
  std::optional<model::Transformer> whole;
  if (ranks.tp.on() && ranks.groups.dp->rank() == 0)
    whole = gather_full_model(model, *ranks.tp.group);
  if (!ranks.main()) return;
  model::Transformer& out = whole ? *whole : model;
  if (out.lora()) {  // TRL + PEFT: the adapter, not the merged model (see `sft merge`)
    export_peft_adapter(out, args.output_dir, ex, sharded);
    if (!sharded) verify_adapter_export(out, args.output_dir);
  } else {
    export_hf_model(out, args.output_dir, ex, sharded);
    if (!sharded) verify_export(out, args.output_dir, ex.dtype);
  }
  // README.md, the model card TRL writes (train/model_card.h).
  write_model_card(args.output_dir,
                   model_card_info(args, ranks.world->size(),
                                   args.push_to_hub ? args.hub_model_id : std::nullopt));
  std::fprintf(
      stderr, "trained %lld steps (train_loss %.6g%s); model saved to %s\n",
      static_cast<long long>(result.global_step), result.train_loss,
      result.skipped_steps
          ? (", " + std::to_string(result.skipped_steps) + " non-finite steps skipped").c_str()
          : "",
      args.output_dir.c_str());
  if (args.push_to_hub) push_output_dir(args);
}

// After preflight (run_train), in phases: the ranks, the model, the data, training, and the
// outputs (or, when a stop request ended the run, the resume command).
int train_checked(const Args& argv, TrainingArgs& args, std::unique_ptr<Comm> world) {
  Ranks ranks = join_ranks(args, std::move(world));
  if (args.fp16)
    log_info(
        "[train] --fp16: the CPU backend has no fp16 kernels; it computes in fp32 "
        "(use --bf16 for mixed precision)");
  // A TRL checkpoint to continue: the weights are its own (the trainer takes its position).
  const std::string base_model = args.model_name_or_path;
  if (args.resume_from_checkpoint && is_continuable_trl_checkpoint(*args.resume_from_checkpoint))
    args.model_name_or_path = *args.resume_from_checkpoint;
  // Every rank reads the same model files: a failure to load them is printed once.
  std::optional<LoadedModel> loaded;
  try {
    agree_on_failure({ranks.world.get()}, ranks.main(),
                     [&] { loaded.emplace(load_model(args, ranks)); });
  } catch (const Error&) {
    args.model_name_or_path = base_model;
    throw;
  }
  args.model_name_or_path = base_model;  // the model card names the base the user gave
  LoadedModel& model = *loaded;
  const TrainData data = prepare_data(args, model.tokenizer_path, ranks);
  const TrainerSetup setup = trainer_setup(args, model, data, ranks);
  ranks.set_timeout(args.ddp_timeout);
  bool exported = false;
  const TrainResult result = run_trainer(
      setup, ranks,
      [&](const WholeTensor& whole, const TrainResult& r) {
        export_outputs(args, model.model, setup.export_options, r, ranks, whole);
      },
      exported);
  if (result.interrupted) {
    if (!ranks.main()) return 0;  // rank 0 wrote the checkpoint and says where
    std::fprintf(stderr, "stopped at step %lld; checkpoint %s\nresume with:\n  %s\n",
                 static_cast<long long>(result.global_step), result.last_checkpoint.c_str(),
                 resume_command(argv, result.last_checkpoint).c_str());
    return 0;
  }
  // A device run's weights come back to the host for the export (and its verification).
  model.model.to_device(Device::kCpu);
  if (!exported) export_outputs(args, model.model, setup.export_options, result, ranks);
  return 0;
}

}  // namespace

SFT_REGISTER_COMMAND("train", "supervised fine-tuning with TRL's flags (sft train --help)",
                     run_train);

}  // namespace sft::cli
