# `sft train` on the tiny Qwen3-MoE of tests/fixtures/trainer_moe (config router_aux_loss_coef
# 0.02) with the router flags as `trl sft` takes them: --router_aux_loss_coef 0.5 and
# --model_init_kwargs '{"router_aux_loss_coef": 0.5, "output_router_logits": true}' (what
# from_pretrained sets on the config) train the same steps, with aux_loss logged and the loss
# not the config's 0.02 run's; --router_aux_loss_coef 0 turns the loss off (no aux_loss logged,
# as TRL's aux_loss_enabled); the exports' config.json carry the coefficient and
# output_router_logits as TRL saves them; a bf16 export passes its check.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P train_moe_flags.cmake
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/trainer_moe/model")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${MODEL}" --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl"
    --max_length 32 --per_device_train_batch_size 2 --max_steps 2 --logging_steps 1
    --save_strategy no --gradient_checkpointing false --num_threads 2 --seed 3)

# The run's log_history as "loss/aux_loss " per logged step (aux_loss "-" when absent).
function(train_log name var)
  execute_process(COMMAND "${SFT}" train ${COMMON} --output_dir "${WORK}/${name}" ${ARGN}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft train ${ARGN}: exit ${rc}\n${out}${err}")
  endif()
  file(READ "${WORK}/${name}/trainer_state.json" state)
  string(JSON n LENGTH "${state}" log_history)
  math(EXPR last "${n} - 1")
  set(log "")
  foreach(i RANGE ${last})
    string(JSON loss ERROR_VARIABLE no_loss GET "${state}" log_history ${i} loss)
    if(NOT no_loss)
      string(JSON aux ERROR_VARIABLE no_aux GET "${state}" log_history ${i} aux_loss)
      if(no_aux)
        set(aux "-")
      endif()
      string(APPEND log "${loss}/${aux} ")
    endif()
  endforeach()
  set(${var} "${log}" PARENT_SCOPE)
  set(train_out "${out}${err}" PARENT_SCOPE)
endfunction()

train_log(config config_log)
train_log(flag flag_log --router_aux_loss_coef 0.5)
train_log(kwargs kwargs_log --model_init_kwargs
          "{\"router_aux_loss_coef\": 0.5, \"output_router_logits\": true}")
if(NOT flag_log STREQUAL kwargs_log)
  message(FATAL_ERROR "--router_aux_loss_coef 0.5 logged '${flag_log}', --model_init_kwargs "
                      "'${kwargs_log}'")
endif()
if(flag_log STREQUAL config_log OR flag_log MATCHES "/-")
  message(FATAL_ERROR "coefficient 0.5 logged '${flag_log}', the config's 0.02 '${config_log}'")
endif()
train_log(off off_log --router_aux_loss_coef 0)
if(NOT off_log MATCHES "^[0-9.e+-]+/- [0-9.e+-]+/- $")
  message(FATAL_ERROR "--router_aux_loss_coef 0 still logs aux_loss: '${off_log}'")
endif()
# output_router_logits false: TRL's SFTTrainer turns the loss on anyway (a notice says so).
train_log(kwargs_false false_log --model_init_kwargs "{\"output_router_logits\": false}")
if(NOT false_log STREQUAL config_log OR NOT train_out MATCHES "output_router_logits false has no effect")
  message(FATAL_ERROR "output_router_logits false: '${false_log}' vs '${config_log}'\n${train_out}")
endif()
# The exports' config.json: the coefficient trained with, output_router_logits on unless it is 0
# (what TRL's SFTTrainer sets on the config it saves).
foreach(run flag:0.5:ON kwargs:0.5:ON off:0:OFF config:0.02:ON)
  string(REPLACE ":" ";" run "${run}")
  list(GET run 0 name)
  list(GET run 1 want_coef)
  list(GET run 2 want_on)
  file(READ "${WORK}/${name}/config.json" cfg)
  string(JSON coef GET "${cfg}" router_aux_loss_coef)
  string(JSON on GET "${cfg}" output_router_logits)
  if(NOT coef EQUAL want_coef OR NOT on STREQUAL want_on)
    message(FATAL_ERROR "${name}: config.json router_aux_loss_coef ${coef}, output_router_logits "
                        "${on}; wanted ${want_coef}, ${want_on}")
  endif()
endforeach()
# A bf16 export is verified against the model rounded as saved, under sft's own (stacked) names.
train_log(bf16 bf16_log --dtype bfloat16)
message(STATUS "router flags: config ${config_log}; 0.5 ${flag_log}; off ${off_log}")
