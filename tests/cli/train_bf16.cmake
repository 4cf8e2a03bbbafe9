# bf16 training tracks fp32: 200 steps of the tiny Qwen3 (tests/fixtures/generate_text) on the
# 16-row text set, once with --bf16 true and once with --bf16 false, from the same seed; the
# final logged loss and HF's train_loss (the run's mean) agree within 2%.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_bf16.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")

# Reads the last "loss" and the "train_loss" of a run's metrics.jsonl.
function(run_losses bf16 last_var mean_var)
  set(out "${WORK}/bf16_${bf16}")
  execute_process(COMMAND "${SFT}" train --model_name_or_path "${ROOT}/tests/fixtures/generate_text"
                  --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl" --max_length 32
                  --per_device_train_batch_size 2 --learning_rate 1e-3 --logging_steps 10
                  --max_steps 200 --report_to none --save_strategy no --num_threads 2
                  --bf16 ${bf16} --output_dir "${out}"
                  OUTPUT_VARIABLE stdout ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft train --bf16 ${bf16} failed (${rc}):\n${stdout}\n${err}")
  endif()
  file(STRINGS "${out}/metrics.jsonl" lines)
  foreach(line IN LISTS lines)
    string(JSON v ERROR_VARIABLE e GET "${line}" loss)
    if(NOT e)
      set(last "${v}")
    endif()
    string(JSON v ERROR_VARIABLE e GET "${line}" train_loss)
    if(NOT e)
      set(mean "${v}")
    endif()
  endforeach()
  if(NOT DEFINED last OR NOT DEFINED mean)
    message(FATAL_ERROR "--bf16 ${bf16}: no loss / train_loss in ${out}/metrics.jsonl")
  endif()
  set(${last_var} "${last}" PARENT_SCOPE)
  set(${mean_var} "${mean}" PARENT_SCOPE)
endfunction()

run_losses(true bf16_last bf16_mean)
run_losses(false fp32_last fp32_mean)
message(STATUS "final loss bf16 ${bf16_last} fp32 ${fp32_last}; train_loss bf16 ${bf16_mean} fp32 ${fp32_mean}")
# |a - b| <= 0.02 |b|, in micro-units (CMake's math is integer-only).
function(check what a b)
  foreach(x a b)
    string(REGEX MATCH "^([0-9]+)\\.?([0-9]*)" m "${${x}}")
    set(whole "${CMAKE_MATCH_1}")
    set(frac "${CMAKE_MATCH_2}000000")
    string(SUBSTRING "${frac}" 0 6 frac)
    string(REGEX REPLACE "^0+([0-9])" "\\1" frac "${frac}")
    math(EXPR ${x}_u "${whole} * 1000000 + ${frac}")
  endforeach()
  math(EXPR diff "${a_u} - ${b_u}")
  if(diff LESS 0)
    math(EXPR diff "-${diff}")
  endif()
  math(EXPR bound "${b_u} / 50")
  if(diff GREATER bound)
    message(FATAL_ERROR "${what}: bf16 ${a} vs fp32 ${b} differ by more than 2%")
  endif()
endfunction()
check("final loss" "${bf16_last}" "${fp32_last}")
check("train_loss" "${bf16_mean}" "${fp32_mean}")
