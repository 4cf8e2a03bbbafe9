# LoRA on a mixture of experts' stacks end to end (PEFT's target_parameters): on the tiny
# Qwen3-MoE of tests/fixtures/trainer_moe, `--lora_target_parameters` as TRL takes it (space-
# separated words, or a YAML list in --config) trains the experts' adapters and writes PEFT's
# keys and adapter_config.json field; a resume from checkpoint-2, and a run with gradient
# checkpointing, write a bit-identical adapter; `sft merge` folds them in. The refusals name the flag, the closest name and the hint, and
# leave no output folder (TRL's default lora_dropout 0.05, which PEFT's ParamWrapper refuses; a
# misspelled stack; a projection's weight, which target_modules adapts).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_lora_experts.cmake
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/trainer_moe/model")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${MODEL}" --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl"
    --max_length 32 --per_device_train_batch_size 2 --learning_rate 1e-2 --save_steps 2
    --num_threads 2 --bf16 false --use_peft true --lora_r 4 --lora_alpha 8)

function(sft expect_rc)
  execute_process(COMMAND "${SFT}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL ${expect_rc})
    message(FATAL_ERROR "sft ${ARGN}\nexit ${rc} (wanted ${expect_rc})\n${out}\n${err}")
  endif()
  set(sft_out "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect_message pattern)
  if(NOT sft_out MATCHES "${pattern}")
    message(FATAL_ERROR "expected /${pattern}/ in:\n${sft_out}")
  endif()
endfunction()

# Space-separated, as `trl sft --lora_target_parameters a b` takes it; 4 steps.
set(A "${WORK}/a")
sft(0 train ${COMMON} --lora_dropout 0 --lora_target_parameters mlp.experts.gate_up_proj
    mlp.experts.down_proj --output_dir "${A}" --max_steps 4)
file(READ "${A}/adapter_config.json" cfg)
string(JSON tp GET "${cfg}" target_parameters)
if(NOT tp MATCHES "\"mlp.experts.gate_up_proj\".*\"mlp.experts.down_proj\"")
  message(FATAL_ERROR "adapter_config.json target_parameters: ${tp}")
endif()
string(JSON tm GET "${cfg}" target_modules)
if(NOT tm STREQUAL "[]")  # qwen3_moe has no PEFT default targets: the experts alone, as PEFT
  message(FATAL_ERROR "adapter_config.json target_modules is ${tm}, not [] as PEFT writes it")
endif()
file(READ "${A}/adapter_model.safetensors" header LIMIT 4096)
foreach(key "base_model.model.model.layers.0.mlp.experts.base_layer.lora_A.weight"
            "base_model.model.model.layers.1.mlp.experts.lora_B.weight")
  string(FIND "${header}" "${key}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "adapter_model.safetensors has no ${key}")
  endif()
endforeach()

# A YAML list in --config, resumed from checkpoint-2: the same adapter, bit for bit.
set(B "${WORK}/b")
file(WRITE "${WORK}/run.yaml" "lora_dropout: 0\nlora_target_parameters:\n  - mlp.experts.gate_up_proj\n  - mlp.experts.down_proj\n")
sft(0 train ${COMMON} --config "${WORK}/run.yaml" --output_dir "${B}" --max_steps 4
    --resume_from_checkpoint "${A}/checkpoint-2")
expect_message("resumed from")
file(SHA256 "${A}/adapter_model.safetensors" ha)
file(SHA256 "${B}/adapter_model.safetensors" hb)
if(NOT ha STREQUAL hb)
  message(FATAL_ERROR "the resumed run's adapter differs from the uninterrupted one's")
endif()

# Gradient checkpointing forms W + delta again in the recomputed forward: the same adapter.
set(C "${WORK}/c")
sft(0 train ${COMMON} --lora_dropout 0 --lora_target_parameters gate_up_proj,down_proj
    --gradient_checkpointing true --output_dir "${C}" --max_steps 4)
file(SHA256 "${C}/adapter_model.safetensors" hc)
if(NOT ha STREQUAL hc)
  message(FATAL_ERROR "gradient checkpointing changed the adapter")
endif()

sft(0 merge --adapter "${A}" --output_dir "${WORK}/merged")
expect_message("merged 4 LoRA adapters")

# The refusals, before anything is written.
set(BAD "${WORK}/bad")
sft(1 train ${COMMON} --lora_target_parameters mlp.experts.down_proj --output_dir "${BAD}"
    --max_steps 1)
expect_message("--lora_target_parameters: lora_dropout 0.05 is refused.*hint: --lora_dropout 0")
sft(1 train ${COMMON} --lora_dropout 0 --lora_target_parameters mlp.expert.down_proj
    --output_dir "${BAD}" --max_steps 1)
expect_message("'mlp.expert.down_proj' matches no parameter.*did you mean 'mlp.experts.down_proj'")
sft(1 train ${COMMON} --lora_dropout 0 --lora_target_parameters self_attn.q_proj.weight
    --output_dir "${BAD}" --max_steps 1)
expect_message("not a stacked expert weight.*--lora_target_modules")
if(EXISTS "${BAD}/adapter_config.json")
  message(FATAL_ERROR "a refused run left ${BAD}/adapter_config.json")
endif()
