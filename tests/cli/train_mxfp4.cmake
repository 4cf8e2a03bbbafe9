# `sft train` on a gpt-oss folder with MXFP4 experts (tests/fixtures/mxfp4/gpt_oss_tiny,
# tools/make_mxfp4_fixture.py): the experts are dequantized at load, and the final export and
# each checkpoint hold the plain model as transformers saves the dequantized one (experts as
# gate_up_proj / down_proj in the saved dtype, here TRL's default float32, no _blocks / _scales,
# config.json without quantization_config: 37 F32 tensors), which
# the run's own export check reloads; a resume from checkpoint-2 (whose experts are the plain
# transposed, interleaved ones, while config.json of the run still says MXFP4) ends with the
# same model, byte for byte; LoRA on it trains too.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_mxfp4.cmake
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/mxfp4/gpt_oss_tiny")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${MODEL}" --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl"
    --max_length 24 --per_device_train_batch_size 2 --max_steps 4 --logging_steps 1 --save_steps 2
    --learning_rate 1e-3 --gradient_checkpointing false --num_threads 2 --seed 5)

function(sft_train)
  execute_process(COMMAND "${SFT}" train ${COMMON} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft train ${ARGN}: exit ${rc}\n${out}${err}")
  endif()
endfunction()

# A saved folder is the plain fp32 model: what `sft inspect --json` sees in it.
function(expect_plain dir)
  file(READ "${dir}/config.json" config)
  if(config MATCHES "quantization_config")
    message(FATAL_ERROR "${dir}/config.json keeps the quantization_config:\n${config}")
  endif()
  execute_process(COMMAND "${SFT}" inspect "${dir}" --json OUTPUT_VARIABLE json
                  ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft inspect ${dir}: exit ${rc}\n${err}")
  endif()
  string(JSON matches GET "${json}" checkpoint_matches_config)
  string(JSON mxfp4 GET "${json}" experts_mxfp4)
  string(JSON dtypes LENGTH "${json}" dtypes_on_disk)
  string(JSON f32 GET "${json}" dtypes_on_disk F32 tensors)
  string(JSON count GET "${json}" num_parameters)
  if(NOT matches OR mxfp4 OR NOT dtypes EQUAL 1 OR NOT f32 EQUAL 37 OR NOT count EQUAL 29802)
    message(FATAL_ERROR "${dir} is not the plain fp32 model (matches ${matches}, mxfp4 ${mxfp4}, "
                        "F32 tensors ${f32} of ${dtypes} dtypes, parameters ${count}):\n${json}")
  endif()
endfunction()

set(A "${WORK}/a")
sft_train(--output_dir "${A}")
expect_plain("${A}")
expect_plain("${A}/checkpoint-2")

sft_train(--output_dir "${WORK}/resumed" --resume_from_checkpoint "${A}/checkpoint-2")
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${A}/model.safetensors"
                        "${WORK}/resumed/model.safetensors" RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "the run resumed from ${A}/checkpoint-2 ends with another model than ${A}")
endif()

sft_train(--output_dir "${WORK}/lora" --use_peft true --lora_target_modules all-linear)
if(NOT EXISTS "${WORK}/lora/adapter_model.safetensors")
  message(FATAL_ERROR "no adapter written by the LoRA run on the MXFP4 folder")
endif()
