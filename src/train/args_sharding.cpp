#include "train/args_sharding.h"

#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "io/options.h"
#include "train/sharding_config.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

std::string message_of(const Error& e) {  // without its "[component] " prefix
  const std::string text = e.what();
  const size_t cut = e.component().size() + 3;
  return text.size() > cut ? text.substr(cut) : text;
}

// sharding_config's errors are about the user's flags and files: usage errors (exit 2).
template <typename F>
ShardingChoice as_usage(F&& f) {
  try {
    return f();
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    fail_usage(kComponent, message_of(e));
  }
}

}  // namespace

int64_t world_size_of_launch(const TrainingArgs& a) {
  if (a.nproc_per_node) return *a.nproc_per_node;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var); v && std::atoll(v) > 1) return std::atoll(v);
  return 1;
}

void resolve_sharding_args(TrainingArgs& a) {
  std::vector<ShardingChoice> choices;
  if (a.zero_stage != 0) {
    ShardingChoice z;
    z.stage = a.zero_stage;
    z.source = "--zero_stage " + std::to_string(a.zero_stage);
    choices.push_back(z);
  }
  if (a.accelerate_config)
    choices.push_back(
        as_usage([&] { return zero_stage_of_accelerate_config(*a.accelerate_config); }));
  std::optional<int64_t> fsdp_stage;
  if (a.fsdp && !a.fsdp->empty()) {
    ShardingChoice f = as_usage([&] { return zero_stage_of_fsdp(*a.fsdp); });
    fsdp_stage = f.stage;
    if (a.fsdp_config) {
      const ShardingChoice fc = as_usage([&] {
        return zero_stage_of_fsdp_config(read_sharding_json(*a.fsdp_config, "--fsdp_config"),
                                         *a.fsdp_config, fsdp_stage);
      });
      f.stage = fc.stage;
      f.source += " with --fsdp_config " + *a.fsdp_config;
      f.notices.insert(f.notices.end(), fc.notices.begin(), fc.notices.end());
    }
    choices.push_back(f);
  } else if (a.fsdp_config) {
    choices.push_back(as_usage([&] {
      return zero_stage_of_fsdp_config(read_sharding_json(*a.fsdp_config, "--fsdp_config"),
                                       *a.fsdp_config, std::nullopt);
    }));
  }
  if (a.deepspeed)
    choices.push_back(as_usage([&] {
      return zero_stage_of_deepspeed(read_sharding_json(*a.deepspeed, "--deepspeed"), *a.deepspeed);
    }));
  const ShardingChoice* chosen = nullptr;
  for (const ShardingChoice& c : choices) {
    a.notices.insert(a.notices.end(), c.notices.begin(), c.notices.end());
    if (!c.stage) continue;
    if (chosen && *chosen->stage != *c.stage)
      fail_usage(kComponent, chosen->source + " means ZeRO stage " +
                                 std::to_string(*chosen->stage) + ", " + c.source + " stage " +
                                 std::to_string(*c.stage) + " (hint: give one of them)");
    if (!chosen) chosen = &c;
  }
  if (chosen) a.zero_stage = *chosen->stage;
  const std::string source = chosen ? chosen->source : "--zero_stage 0";
  if (a.zero_stage < 0 || a.zero_stage > 3)
    fail_usage(kComponent, source +
                               ": ZeRO stages are 0, 1, 2 and 3 (hint: --zero_stage 2 "
                               "shards the optimizer state and the gradients)");
  if (a.zero_stage == 3) {
    // Sharding parameters over one data-parallel rank only adds work: refuse it now, before
    // any data is prepared (the launch tells the world size: --nproc_per_node or mpirun's).
    const int64_t world = world_size_of_launch(a);
    const int64_t dp = a.tp_size > 0 && world % a.tp_size == 0 ? world / a.tp_size : world;
    if (dp <= 1)
      fail_usage(kComponent,
                 source +
                     " asks for ZeRO-3 (parameters sharded over the data-parallel ranks) "
                     "with " +
                     std::to_string(world) + " process(es)" +
                     (a.tp_size > 1 ? " at --tp_size " + std::to_string(a.tp_size) : "") +
                     ", so one data-parallel rank (hint: launch several, e.g. --nproc_per_node "
                     "2 or mpirun -np 2, or leave ZeRO out on one process)");
  }
}

}  // namespace sft
