# A command's flags go through OptionSet (io/options.h): a misspelt flag fails with exit code
# 2 (a usage error, docs/cli.md) naming the closest valid flag, and --help lists the flags
# under their group headings.
# With -DREFUSED=calls (`,`-separated, each a call's words after COMMAND joined by `+`, NONE
# for no words), each call must be refused the same way: e.g. a missing or extra positional.
# Usage: cmake -DSFT=path/to/sft -DCOMMAND=generate (or debug,forward) -DTYPO=max_new_token
#              -DSUGGEST=max_new_tokens -DGROUPS=input,generation,output [-DREFUSED=a+b,NONE]
#              -P usage_errors.cmake
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" COMMAND "${COMMAND}")
string(REPLACE "," ";" GROUPS "${GROUPS}")
string(REPLACE "," ";" REFUSED "${REFUSED}")
foreach(call ${REFUSED})
  set(words)
  if(NOT call STREQUAL "NONE")
    string(REPLACE "+" ";" words "${call}")
  endif()
  execute_process(COMMAND "${SFT}" ${COMMAND} ${words} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "(error|usage): ")
    message(FATAL_ERROR "sft ${COMMAND} ${words}: exit ${rc}, wanted 2 (a usage error)\n${out}${err}")
  endif()
endforeach()
execute_process(COMMAND "${SFT}" ${COMMAND} --${TYPO} 3 OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "sft ${COMMAND} --${TYPO}: exit ${rc}, wanted 2 (a usage error)\n${out}${err}")
endif()
string(FIND "${err}" "unknown option --${TYPO} (did you mean --${SUGGEST}?" at)
if(at EQUAL -1)
  message(FATAL_ERROR "sft ${COMMAND} --${TYPO}: stderr does not suggest --${SUGGEST}:\n${err}")
endif()

execute_process(COMMAND "${SFT}" ${COMMAND} --help OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft ${COMMAND} --help: exit ${rc}\n${err}")
endif()
set(last -1)
foreach(group ${GROUPS})
  string(FIND "${out}" "\n${group}:\n  --" at)
  if(at LESS_EQUAL last)
    message(FATAL_ERROR "sft ${COMMAND} --help: no group '${group}:' (after the previous one):\n${out}")
  endif()
  set(last ${at})
endforeach()
string(FIND "${out}" "  --${SUGGEST} " at)
if(at EQUAL -1)
  message(FATAL_ERROR "sft ${COMMAND} --help does not list --${SUGGEST}:\n${out}")
endif()
message(STATUS "sft ${COMMAND}: --${TYPO} suggests --${SUGGEST} (exit 2); --help lists ${GROUPS}")

# `sft train` (with -DMODEL=model folder -DDATA=train.jsonl -DWORK=scratch): mistakes are found
# before any work — usage errors exit 2, the output_dir and dataset checks exit 1 with a true
# message — and the notices of accepted TRL flags come first.
if(NOT DEFINED MODEL)
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(BASE --model_name_or_path "${MODEL}" --dataset_name "${DATA}" --max_steps 1)
function(train_expect want_rc want_text)
  execute_process(COMMAND "${SFT}" train ${BASE} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL ${want_rc})
    message(FATAL_ERROR "sft train ${ARGN}: exit ${rc}, wanted ${want_rc}\n${out}${err}")
  endif()
  string(FIND "${out}${err}" "${want_text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "sft train ${ARGN}: output lacks '${want_text}':\n${out}${err}")
  endif()
  foreach(never "[internal]" "huggingface-cli" "training:")
    string(FIND "${out}${err}" "${never}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "sft train ${ARGN}: output has '${never}':\n${out}${err}")
    endif()
  endforeach()
  if(EXISTS "${WORK}/cache")
    message(FATAL_ERROR "sft train ${ARGN}: prepared data before failing")
  endif()
endfunction()
set(OUT --output_dir "${WORK}/out")
train_expect(2 "is not one of: bfd" ${OUT} --packing_strategy ffd)
train_expect(2 "unknown lr_scheduler_type 'cosin'" ${OUT} --lr_scheduler_type cosin)
train_expect(2 "did you mean --learning_rate?" ${OUT} --lerning_rate 1e-4)
train_expect(2 "--output_dir cannot be empty" --output-dir=)
train_expect(2 "--load_in_4bit true without --use_peft: a 4-bit base cannot be trained" ${OUT}
             --load_in_4bit)
train_expect(2 "--bnb_4bit_quant_type 'int4' is not a bitsandbytes 4-bit type" ${OUT}
             --load_in_4bit --use_peft --bnb_4bit_quant_type int4)
train_expect(2 "--load_in_8bit true: 8-bit (LLM.int8) loading is not supported" ${OUT}
             --load_in_8bit)
# A folder saved 4-bit (bitsandbytes quantization_config) trains only with adapters.
train_expect(2 "is a bitsandbytes 4-bit checkpoint: its frozen 4-bit weights cannot be trained"
             ${OUT} --model_name_or_path "${CMAKE_CURRENT_LIST_DIR}/../fixtures/bnb4/qwen3_nf4_nested")
# PEFT's targets would reach a multimodal folder's vision tower, which sft does not load.
train_expect(1 "is a multimodal model (its text model beside a vision tower), and PEFT's target modules would also match" ${OUT}
             --use_peft --model_name_or_path "${CMAKE_CURRENT_LIST_DIR}/../fixtures/models/gemma3_multimodal")
train_expect(1 "would also match its vision tower, which sft does not load (hint: train it without --use_peft, or save its text model alone with MistralForCausalLM" ${OUT}
             --use_peft --model_name_or_path "${CMAKE_CURRENT_LIST_DIR}/../fixtures/models/mistral3_multimodal")
train_expect(2 "takes only --flags" ${OUT} extra)
# Expert parallelism on one process: our --ep_size, transformers' DistributedConfig through
# --model_init_kwargs; a load-balancing coefficient for a model without experts (TRL's ValueError).
train_expect(2 "--ep_size 2: the world size 1 (mpirun -np or --nproc_per_node) does not divide" ${OUT}
             --ep_size 2)
train_expect(2 "--ep_size 2: the world size 1" ${OUT}
             --model_init_kwargs "{\"distributed_config\": {\"ep_size\": 2}}")
train_expect(2 "is not a mixture of experts, so there is no load-balancing loss" ${OUT}
             --router_aux_loss_coef 0.01)
train_expect(2 "unknown lr_scheduler_kwargs key 'bogus'" ${OUT} --lr_scheduler_kwargs "{\"bogus\": 1}")
# Dash spellings and a notice, then a dataset path that does not exist: file not found.
train_expect(1 "--torch_compile has no effect in sft.cpp" --output-dir "${WORK}/out"
             --torch-compile --dataset_name data/missing.jsonl)
train_expect(1 "--dataset_name data/missing.jsonl: dataset file not found" ${OUT}
             --dataset_name data/missing.jsonl)
train_expect(1 "--model_name_or_path ./no_model: model folder not found" ${OUT}
             --model_name_or_path ./no_model)
# output_dir: not writable (even for root: /proc), a file, non-empty (the hint is sft's own flag).
train_expect(1 "output_dir /proc/sft_out is not writable" --output_dir /proc/sft_out)
file(WRITE "${WORK}/a_file" "x")
train_expect(1 "exists and is not a folder" --output_dir "${WORK}/a_file")
file(MAKE_DIRECTORY "${WORK}/full")
file(WRITE "${WORK}/full/notes.txt" "x")
train_expect(1 "pick a new --output_dir or empty this one" --output_dir "${WORK}/full")
train_expect(1 "no complete sft checkpoint in ${WORK}/full" --output_dir "${WORK}/full"
             --resume_from_checkpoint true)
if(EXISTS "${WORK}/out")
  message(FATAL_ERROR "a refused run created ${WORK}/out")
endif()
# `sft prepare --help` lists the flags preparation reads, not the training ones.
execute_process(COMMAND "${SFT}" prepare --help OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "  --max_length " OR NOT out MATCHES "  --dump "
   OR out MATCHES "--learning_rate" OR out MATCHES "--torch_compile")
  message(FATAL_ERROR "sft prepare --help (exit ${rc}) should list only preparation flags:\n${out}")
endif()
message(STATUS "sft train: usage errors exit 2 before any work; preflight messages are true")
