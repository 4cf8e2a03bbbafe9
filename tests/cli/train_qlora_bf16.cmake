# QLoRA under --bf16 end to end (model/frozen_base.h): the frozen base holds its LM head in bf16,
# and its embedding in bf16 when the weights load in bf16. On a bf16 checkpoint (the tiny Qwen3
# of tests/fixtures/trl_parity saved in bf16 by `sft train --dtype bfloat16`, lr 1e-30) the table's
# values are bf16 either way, so `--dtype bfloat16` (table held in bf16), `--dtype auto` (the
# checkpoint's bf16) and `--dtype float32` (table in fp32, as TRL's default) log the same loss,
# grad_norm, entropy and accuracy at every step, bit for bit. `--init_from_config` draws the base
# straight into that form (the pad row zeroed in the bf16 table), with modules_to_save too.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_qlora_bf16.cmake
cmake_minimum_required(VERSION 3.25)
set(DATA "${ROOT}/tests/fixtures/trl_parity/data.jsonl")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --dataset_name "${DATA}" --max_length 64 --per_device_train_batch_size 2
    --logging_steps 1 --save_strategy no --num_threads 2 --seed 42 --report_to none)
set(QLORA --load_in_4bit true --use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0
    --lora_target_modules all-linear --bf16 true --max_steps 3 --learning_rate 1e-3)

function(sft)
  execute_process(COMMAND "${SFT}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft ${ARGN}\nexit ${rc}\n${out}\n${err}")
  endif()
endfunction()

# "step:loss:grad_norm:entropy:accuracy " per logged step of metrics.jsonl.
function(metrics dir var)
  file(STRINGS "${dir}/metrics.jsonl" lines REGEX "\"grad_norm\"")
  set(out "")
  foreach(line IN LISTS lines)
    foreach(key step loss grad_norm entropy mean_token_accuracy)
      string(JSON v GET "${line}" ${key})
      string(APPEND out "${v}:")
    endforeach()
    string(APPEND out " ")
  endforeach()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

# The bf16 checkpoint: one step at a learning rate that changes nothing, saved in bf16.
set(BASE "${WORK}/bf16_base")
sft(train --model_name_or_path "${ROOT}/tests/fixtures/trl_parity/model" ${COMMON} --max_steps 1
    --learning_rate 1e-30 --bf16 false --dtype bfloat16 --output_dir "${BASE}")
file(READ "${BASE}/config.json" config)
if(NOT config MATCHES "\"dtype\": \"bfloat16\"")
  message(FATAL_ERROR "the base was not saved in bf16:\n${config}")
endif()

foreach(dtype bfloat16 auto float32)
  sft(train --model_name_or_path "${BASE}" ${COMMON} ${QLORA} --dtype ${dtype}
      --output_dir "${WORK}/${dtype}")
  metrics("${WORK}/${dtype}" m_${dtype})
  if(NOT EXISTS "${WORK}/${dtype}/adapter_model.safetensors")
    message(FATAL_ERROR "--dtype ${dtype}: no adapter saved")
  endif()
endforeach()
if(m_bfloat16 STREQUAL "" OR NOT m_bfloat16 STREQUAL m_float32 OR NOT m_auto STREQUAL m_float32)
  message(FATAL_ERROR "a bf16 table looked up differently:\n  bfloat16 ${m_bfloat16}\n"
                      "  auto     ${m_auto}\n  float32  ${m_float32}")
endif()
message(STATUS "bit for bit over --dtype bfloat16 / auto / float32: ${m_float32}")

# Random init straight into the form; modules_to_save copies the fp32 norm weights first.
foreach(dtype bfloat16 float32)
  sft(train --model_name_or_path "${BASE}" ${COMMON} ${QLORA} --dtype ${dtype}
      --init_from_config true --lora_modules_to_save norm --output_dir "${WORK}/init_${dtype}")
  metrics("${WORK}/init_${dtype}" m)
  if(NOT m MATCHES "^1:[0-9.]+:[0-9.]+:")
    message(FATAL_ERROR "--init_from_config --dtype ${dtype}: no finite losses: ${m}")
  endif()
endforeach()
