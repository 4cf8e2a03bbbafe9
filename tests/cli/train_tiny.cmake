# `sft train` end to end on the tiny Qwen3 of tests/fixtures/generate_text (real tokenizer
# and chat template) and a 16-row text JSONL: a few steps with eval, TensorBoard and
# checkpoints; the files a run leaves; a resume from checkpoint-2 that logs the same losses;
# --init_from_config with padded batches on a chat dataset; the refusals (non-empty
# output_dir, --use_dora); the device line (--use_cpu).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_tiny.cmake
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/generate_text")
set(DATA "${ROOT}/tests/fixtures/train_cli")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${MODEL}" --max_length 32 --per_device_train_batch_size 2
    --gradient_accumulation_steps 2 --learning_rate 1e-3 --logging_steps 1 --save_steps 2
    --gradient_checkpointing false --num_threads 2)

# In WORKING_DIRECTORY ${run_in} when set.
function(sft_train expect_rc)
  if(NOT run_in)
    set(run_in "${WORK}")
  endif()
  execute_process(COMMAND "${SFT}" train ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc WORKING_DIRECTORY "${run_in}")
  if(NOT rc EQUAL ${expect_rc})
    message(FATAL_ERROR "sft train ${ARGN}\nexit ${rc} (wanted ${expect_rc})\n${out}\n${err}")
  endif()
  set(train_out "${out}${err}" PARENT_SCOPE)
  set(train_stdout "${out}" PARENT_SCOPE)
  set(train_stderr "${err}" PARENT_SCOPE)
endfunction()

# Losses of the log_history in trainer_state.json, as one string.
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

sft_train(0 --help)
foreach(group "--learning_rate" "--packing" "--output_dir")
  if(NOT train_out MATCHES "${group}")
    message(FATAL_ERROR "sft train --help does not mention ${group}")
  endif()
endforeach()

set(A "${WORK}/a")
sft_train(0 ${COMMON} --dataset_name "${DATA}/train.jsonl" --output_dir "${A}" --max_steps 4
          --eval_strategy steps --eval_steps 2 --eval_split_ratio 0.25 --report_to tensorboard)
# The first log line names the device (train/device_choice.h) with its name, memory and why.
string(REGEX MATCH "^[^\n]*" first_line "${train_stderr}")
if(NOT first_line MATCHES "^\\[sft info\\] \\[device\\] (cpu|cuda:[0-9]+) \\(.*[0-9.]+ GiB.*\\): ")
  message(FATAL_ERROR "the first line of sft train is not the device: '${first_line}'\n${train_out}")
endif()
foreach(f model.safetensors config.json generation_config.json tokenizer.json
          tokenizer_config.json metrics.jsonl trainer_state.json training_curves.svg
          checkpoint-2/sft_checkpoint.json checkpoint-4/optimizer.safetensors)
  if(NOT EXISTS "${A}/${f}")
    message(FATAL_ERROR "sft train left no ${A}/${f}\n${train_out}")
  endif()
endforeach()
file(GLOB events "${A}/runs/*/events.out.tfevents.*")
if(NOT events)
  message(FATAL_ERROR "no TensorBoard event file under ${A}/runs")
endif()
# transformers 5's folder per run: runs/<%b%d_%H-%M-%S>_<host>.
if(NOT events MATCHES "/runs/[A-Z][a-z][a-z][0-3][0-9]_[0-2][0-9]-[0-5][0-9]-[0-5][0-9]_[^/]+/events")
  message(FATAL_ERROR "TensorBoard events not in runs/<date>_<host>: ${events}")
endif()
# Feedback: each start-up phase named with its time, plain lines (no control characters) when
# stderr is not a terminal; losses with 6 significant digits.
foreach(line "loading weights: " "preparing data: " "initialising the trainer: ")
  string(FIND "${train_out}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "sft train printed no '${line}' line:\n${train_out}")
  endif()
endforeach()
string(ASCII 13 cr)
string(ASCII 27 esc)
if(train_out MATCHES "[${cr}${esc}]")
  message(FATAL_ERROR "control characters in sft train's output to a pipe:\n${train_out}")
endif()
if(NOT train_out MATCHES "\\| loss [0-9]\\.[0-9][0-9][0-9][0-9][0-9] ")
  message(FATAL_ERROR "losses are not printed with 6 significant digits:\n${train_out}")
endif()
# The metric lines (and the final train_runtime one) on stdout, as TRL prints its metric
# dicts; phases and other lines on stderr, so `sft train > log` keeps the metrics.
if(NOT train_stdout MATCHES "\\| loss [0-9]" OR NOT train_stdout MATCHES "\\| train_runtime "
   OR train_stderr MATCHES "\\| loss [0-9]" OR train_stdout MATCHES "loading weights")
  message(FATAL_ERROR "metrics not on stdout alone:\nstdout:\n${train_stdout}\nstderr:\n${train_stderr}")
endif()
file(STRINGS "${A}/metrics.jsonl" lines REGEX "\"eval_loss\"")
list(LENGTH lines n_eval)
if(NOT n_eval EQUAL 2)
  message(FATAL_ERROR "expected 2 eval logs in metrics.jsonl, got ${n_eval}")
endif()
if(train_out MATCHES "compute[s]? in fp32")
  message(FATAL_ERROR "a default (bf16) run printed an fp32 notice:\n${train_out}")
endif()

# Resuming from checkpoint-2 into another folder logs the same losses, bit for bit.
set(B "${WORK}/b")
sft_train(0 ${COMMON} --dataset_name "${DATA}/train.jsonl" --output_dir "${B}" --max_steps 4
          --eval_strategy steps --eval_steps 2 --eval_split_ratio 0.25
          --resume_from_checkpoint "${A}/checkpoint-2")
losses("${A}" la)
losses("${B}" lb)
if(NOT la STREQUAL lb OR la STREQUAL "")
  message(FATAL_ERROR "resumed losses differ:\n  ${la}\n  ${lb}")
endif()
message(STATUS "losses: ${la}")

# A non-empty output_dir is refused; --use_dora is refused (LoRA: train_lora_outputs.cmake).
sft_train(1 ${COMMON} --dataset_name "${DATA}/train.jsonl" --output_dir "${A}" --max_steps 1)
if(NOT train_out MATCHES "already exists and is not empty")
  message(FATAL_ERROR "wrong refusal:\n${train_out}")
endif()
sft_train(2 ${COMMON} --dataset_name "${DATA}/train.jsonl" --output_dir "${WORK}/c" --use_peft true
          --use_dora true)
if(NOT train_out MATCHES "DoRA .*is not implemented")
  message(FATAL_ERROR "wrong --use_dora message:\n${train_out}")
endif()

# Random init from the config, padded batches, a chat dataset.
set(D "${WORK}/d")
sft_train(0 ${COMMON} --dataset_name "${DATA}/chat.jsonl" --output_dir "${D}" --max_steps 2
          --init_from_config true --padding_free false --pad_to_multiple_of 8
          --assistant_only_loss false --save_strategy no --use_cpu)
if(NOT train_out MATCHES "\\[device\\] cpu \\([^\n]*\\): --use_cpu\n")
  message(FATAL_ERROR "--use_cpu: the device line does not say it\n${train_out}")
endif()
if(NOT EXISTS "${D}/model.safetensors" OR EXISTS "${D}/checkpoint-2")
  message(FATAL_ERROR "--init_from_config run: unexpected files in ${D}\n${train_out}")
endif()

# Without --output_dir: TRL's default folder, trainer_output, in the working directory.
set(E "${WORK}/e")
file(MAKE_DIRECTORY "${E}")
set(run_in "${E}")
sft_train(0 ${COMMON} --dataset_name "${DATA}/train.jsonl" --max_steps 1 --save_strategy no)
unset(run_in)
if(NOT EXISTS "${E}/trainer_output/model.safetensors")
  message(FATAL_ERROR "no --output_dir: no ${E}/trainer_output/model.safetensors\n${train_out}")
endif()
