# LoRA end to end on the tiny Qwen3 of tests/fixtures/generate_text: `sft train --use_peft`
# (dropout 0.1, so the seeded masks matter) leaves a PEFT adapter folder and adapter
# checkpoints; a resume from checkpoint-3 logs the same losses and writes a bit-identical
# adapter; the adapter folder continues training as --model_name_or_path; `sft merge` writes
# a full model that `sft generate` reads, and `sft generate` takes the adapter folder too;
# the refusals name the flag / module / file (rank 0, unknown target, mismatched base).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_lora_outputs.cmake
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/generate_text")
set(DATA "${ROOT}/tests/fixtures/train_cli")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --dataset_name "${DATA}/train.jsonl" --max_length 32 --per_device_train_batch_size 2
    --gradient_accumulation_steps 2 --learning_rate 1e-2 --logging_steps 1 --save_steps 3
    --num_threads 2 --bf16 false)
set(LORA --use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0.1
    --lora_target_modules all-linear)

function(sft expect_rc)
  execute_process(COMMAND "${SFT}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL ${expect_rc})
    message(FATAL_ERROR "sft ${ARGN}\nexit ${rc} (wanted ${expect_rc})\n${out}\n${err}")
  endif()
  set(sft_out "${out}${err}" PARENT_SCOPE)
  set(sft_stdout "${out}" PARENT_SCOPE)
endfunction()

function(expect_message pattern)
  if(NOT sft_out MATCHES "${pattern}")
    message(FATAL_ERROR "expected /${pattern}/ in:\n${sft_out}")
  endif()
endfunction()

function(losses dir var)
  file(READ "${dir}/trainer_state.json" state)
  string(JSON n LENGTH "${state}" log_history)
  math(EXPR last "${n} - 1")
  set(out "")
  foreach(i RANGE ${last})
    string(JSON loss ERROR_VARIABLE no_loss GET "${state}" log_history ${i} loss)
    if(NOT no_loss)
      string(JSON step GET "${state}" log_history ${i} step)
      string(APPEND out "${step}:${loss} ")
    endif()
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# A fresh adapter, 6 steps.
set(A "${WORK}/a")
sft(0 train --model_name_or_path "${MODEL}" ${COMMON} ${LORA} --output_dir "${A}" --max_steps 6)
expect_message("trainable: LoRA")
foreach(f adapter_config.json adapter_model.safetensors tokenizer.json tokenizer_config.json
          checkpoint-3/adapter_model.safetensors checkpoint-3/optimizer.safetensors)
  if(NOT EXISTS "${A}/${f}")
    message(FATAL_ERROR "sft train --use_peft left no ${A}/${f}\n${sft_out}")
  endif()
endforeach()
if(EXISTS "${A}/model.safetensors")
  message(FATAL_ERROR "a LoRA run must not write the base weights (${A}/model.safetensors)")
endif()
file(READ "${A}/adapter_config.json" cfg)
foreach(kv "r:4" "lora_alpha:8" "peft_type:LORA" "task_type:CAUSAL_LM" "bias:none")
  string(REPLACE ":" ";" kv "${kv}")
  list(GET kv 0 k)
  list(GET kv 1 v)
  string(JSON got GET "${cfg}" ${k})
  if(NOT got STREQUAL v)
    message(FATAL_ERROR "adapter_config.json: ${k} is ${got}, expected ${v}")
  endif()
endforeach()
string(JSON ntargets LENGTH "${cfg}" target_modules)
if(NOT ntargets EQUAL 7)
  message(FATAL_ERROR "all-linear should adapt 7 projections, adapter_config.json has ${ntargets}")
endif()

# Resume from checkpoint-3: the same losses, a bit-identical adapter.
set(B "${WORK}/b")
file(COPY "${A}/checkpoint-3" DESTINATION "${B}")
sft(0 train --model_name_or_path "${MODEL}" ${COMMON} ${LORA} --output_dir "${B}" --max_steps 6
    --resume_from_checkpoint "${B}/checkpoint-3")
losses("${A}" la)
losses("${B}" lb)
if(NOT la STREQUAL lb)
  message(FATAL_ERROR "resumed LoRA run logs other losses:\n  ${la}\n  ${lb}")
endif()
file(SHA256 "${A}/adapter_model.safetensors" ha)
file(SHA256 "${B}/adapter_model.safetensors" hb)
if(NOT ha STREQUAL hb)
  message(FATAL_ERROR "resumed LoRA run wrote another adapter")
endif()
message(STATUS "losses: ${la}")

# The adapter folder as the model: training continues from its weights.
sft(0 train --model_name_or_path "${A}" ${COMMON} --output_dir "${WORK}/c" --max_steps 1
    --save_strategy no)
expect_message("LoRA r 4 on 14 projections")

# Merge, then generate from the merged model and from the adapter: the same greedy text.
sft(0 merge --adapter "${A}" --output_dir "${WORK}/merged" --dtype float32)
expect_message("merged 14 LoRA adapters")
sft(0 generate --model "${WORK}/merged" --prompt "hello" --max_new_tokens 8 --greedy)
set(merged_text "${sft_stdout}")
sft(0 generate --model "${A}" --prompt "hello" --max_new_tokens 8 --greedy)
if(NOT sft_stdout STREQUAL merged_text)
  message(FATAL_ERROR "generate: adapter and merged model differ:\n${sft_stdout}\n${merged_text}")
endif()

# Refusals (flag mistakes exit 2, as every usage error; TRL's space-separated list form too).
sft(2 train --model_name_or_path "${MODEL}" ${COMMON} --output_dir "${WORK}/e1" --use_peft true
    --lora_r 0)
expect_message("--lora_r must be a positive rank")
sft(2 train --model_name_or_path "${MODEL}" ${COMMON} --output_dir "${WORK}/e2" --use_peft true
    --lora_target_modules q_proj qkvo_proj)
expect_message("--lora_target_modules: 'qkvo_proj' is not a projection")
sft(1 train --model_name_or_path "${MODEL}" ${COMMON} --output_dir "${WORK}/e3" --use_peft true
    --lora_modules_to_save nothing_here)
expect_message("modules_to_save 'nothing_here' matches no module")
# An adapter trained on another base (a llama with 4 kv heads and intermediate 96).
sft(1 merge --adapter "${A}" --base "${ROOT}/tests/fixtures/parity/llama_mha_untied"
    --output_dir "${WORK}/e4")
expect_message("adapter_model.safetensors: tensor 'base_model.model.model.layers.0.*shape")
