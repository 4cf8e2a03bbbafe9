# Expert parallelism (--ep_size, model/expert_parallel.h) under mpirun on the tiny mixtures of
# experts of tests/fixtures (4 experts, top 2): Qwen3-MoE (trainer_moe) and gpt-oss
# (trainer_moe_gpt_oss: router and expert biases, the clamped SwiGLU). One ctest entry per CASE:
#   ep         EP 2 on np 2 and EP 2 × DP 2 on np 4 vs the same np without EP (each rank routes
#              the same rows, so the load-balancing loss is the same): per-step loss, aux_loss,
#              grad_norm, accuracy, entropy and the final weights within 1e-5 relative over 10
#              steps (and with 2 accumulated micro-batches); transformers' distributed_config
#              spelling is the same run bit for bit;
#              bf16 + packing + gradient checkpointing + evaluation with EP 2 vs without
#   ep_resume  an EP 2 checkpoint-3 resumed with EP 2 equals the uninterrupted run bit for bit;
#              resumed without EP, and a checkpoint without EP resumed with EP 2, within 1e-5
#              (checkpoints hold the whole model and moments); refusals before any work, naming
#              both flags: a world size (also over --tp_size) or an expert count that does
#              not divide, ZeRO, LoRA, a dense model
#   ep_tp      EP 2 under tensor parallelism: TP 2 × DP 2 on np 4 (the experts whole on each
#              TP rank) vs DP 2 on np 2, then TP 2 × EP 2 on np 4 (each TP rank's two
#              data-parallel ranks form its EP group) vs TP 2 × DP 2: per-step loss, aux_loss,
#              grad_norm and the final weights within 1e-5 over 6 steps, and the step-3
#              checkpoint (the experts gathered over the EP group, then TP assembles slices),
#              which resumes with TP 2 × EP 2 bit for bit and on DP 2 within 1e-5
#   ep_memory  a rank keeps only its experts: on a mixture whose experts are ~96% of the
#              parameters (16 experts of the trainer_moe fixture's layer, widened, drawn with
#              --init_from_config), an EP 2 run with a checkpoint and an evaluation (each gathers
#              every expert, then releases the others again) keeps its parameter, gradient
#              and moment arenas at most 60% resident after every step (mincore; about 52%
#              expected, 100% when the other ranks' experts stay)
# (One process is no reference: the load-balancing loss is per micro-batch and rank.)
# Usage: cmake -DSFT=sft -DMPIRUN=mpirun -DCOMPARE=sft_compare_weights -DROOT=repo
#              -DWORK=scratch -DCASE=ep -P train_ep_mpi.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl" --max_length 32
    --learning_rate 2e-4 --logging_steps 1 --gradient_checkpointing false --bf16 false
    --disable_tqdm true --num_threads 1 --max_grad_norm 1.0 --weight_decay 0.01)
set(FAMILIES trainer_moe trainer_moe_gpt_oss)

# run(<np> <expect: 0 or "fail"> <args...>): sets run_out.
function(run np expect)
  execute_process(COMMAND "${MPIRUN}" --oversubscribe -np ${np} "${SFT}" train ${ARGN}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 90)
  if((expect STREQUAL "0" AND NOT rc EQUAL 0) OR (expect STREQUAL "fail" AND rc EQUAL 0))
    message(FATAL_ERROR "mpirun -np ${np} sft train ${ARGN}\nexit ${rc} (wanted ${expect})\n"
                        "${out}\n${err}")
  endif()
  set(run_out "${out}${err}" PARENT_SCOPE)
endfunction()

# refused(<np> <message regex> <args...>): the run fails naming the cause, before any step.
function(refused np pattern)
  run(${np} fail ${ARGN})
  if(NOT run_out MATCHES "${pattern}")
    message(FATAL_ERROR "wanted a refusal matching '${pattern}':\n${run_out}")
  endif()
  if(run_out MATCHES "training: ")
    message(FATAL_ERROR "refused only after training started:\n${run_out}")
  endif()
endfunction()

function(same a b tol)  # [metric keys]: the metrics only
  if(ARGN)
    set(what --metrics "${a}" "${b}" ${tol} ${ARGN})
  else()
    execute_process(COMMAND "${COMPARE}" --metrics "${a}" "${b}" ${tol} OUTPUT_VARIABLE out
                    RESULT_VARIABLE rc)
    message(STATUS "metrics ${a} vs ${b}: ${out}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "metrics of ${a} and ${b} differ by more than ${tol}:\n${out}")
    endif()
    set(what "${a}" "${b}" ${tol})
  endif()
  execute_process(COMMAND "${COMPARE}" ${what} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  message(STATUS "${a} vs ${b}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} differ by more than ${tol}:\n${out}${err}")
  endif()
endfunction()

if(CASE STREQUAL "ep")
  set(STEPS --max_steps 10 --save_strategy no)
  foreach(m ${FAMILIES})
    set(M ${COMMON} ${STEPS} --model_name_or_path "${ROOT}/tests/fixtures/${m}/model")
    run(2 0 ${M} --per_device_train_batch_size 2 --output_dir "${WORK}/${m}_dp2")
    run(2 0 ${M} --per_device_train_batch_size 2 --output_dir "${WORK}/${m}_ep2" --ep_size 2)
    if(NOT run_out MATCHES "2 data-parallel rank\\(s\\) in expert-parallel groups of 2")
      message(FATAL_ERROR "the EP 2 run does not report its layout:\n${run_out}")
    endif()
    same("${WORK}/${m}_dp2" "${WORK}/${m}_ep2" 1e-5)
    run(4 0 ${M} --per_device_train_batch_size 1 --output_dir "${WORK}/${m}_dp4")
    run(4 0 ${M} --per_device_train_batch_size 1 --output_dir "${WORK}/${m}_ep2dp2" --ep_size 2)
    same("${WORK}/${m}_dp4" "${WORK}/${m}_ep2dp2" 1e-5)
  endforeach()
  # Gradient accumulation: the owners' gradients accumulate over the micro-batches.
  set(G ${COMMON} --max_steps 5 --save_strategy no --per_device_train_batch_size 1
      --gradient_accumulation_steps 2 --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe/model")
  run(2 0 ${G} --output_dir "${WORK}/gas_dp2")
  run(2 0 ${G} --output_dir "${WORK}/gas_ep2" --ep_size 2)
  same("${WORK}/gas_dp2" "${WORK}/gas_ep2" 1e-5)
  # transformers' spelling: DistributedConfig(ep_size=2) through --model_init_kwargs.
  run(2 0 ${COMMON} ${STEPS} --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe/model"
      --per_device_train_batch_size 2 --output_dir "${WORK}/kwargs"
      --model_init_kwargs "{\"distributed_config\": {\"ep_size\": 2}}")
  same("${WORK}/trainer_moe_ep2" "${WORK}/kwargs" 0)
  # bf16 with packing, gradient checkpointing (the exchange runs again in the recompute) and an
  # evaluation (on the gathered experts, without exchange): the owners' grouped GEMMs see other
  # row groups, so the bf16 roundings may differ in the last bit.
  set(B --max_steps 6 --save_strategy no --per_device_train_batch_size 2 --bf16 true
      --packing true --max_length 64 --gradient_checkpointing true --eval_strategy steps
      --eval_steps 3 --eval_split_ratio 0.2)
  foreach(m ${FAMILIES})
    set(M ${COMMON} ${B} --model_name_or_path "${ROOT}/tests/fixtures/${m}/model")
    run(2 0 ${M} --output_dir "${WORK}/${m}_bf16_dp2")
    run(2 0 ${M} --output_dir "${WORK}/${m}_bf16_ep2" --ep_size 2)
    same("${WORK}/${m}_bf16_dp2" "${WORK}/${m}_bf16_ep2" 1e-3
         "loss,aux_loss,grad_norm,entropy,num_tokens,eval_loss,eval_entropy")
  endforeach()
elseif(CASE STREQUAL "ep_resume")
  set(R ${COMMON} --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe_gpt_oss/model"
      --max_steps 6 --save_steps 3 --per_device_train_batch_size 2)
  run(2 0 ${R} --output_dir "${WORK}/ep" --ep_size 2)
  run(2 0 ${R} --output_dir "${WORK}/dp")
  foreach(c ep_ep ep_dp dp_ep)  # <checkpoint's layout>_<resume's layout>
    string(REGEX MATCH "^[a-z]+" from "${c}")
    file(COPY "${WORK}/${from}/checkpoint-3" DESTINATION "${WORK}/${c}")
    set(layout)
    if(c MATCHES "_ep$")
      set(layout --ep_size 2)
    endif()
    run(2 0 ${R} --output_dir "${WORK}/${c}" --resume_from_checkpoint true ${layout})
  endforeach()
  same("${WORK}/ep" "${WORK}/ep_ep" 0)
  same("${WORK}/ep" "${WORK}/ep_dp" 1e-5)
  same("${WORK}/dp" "${WORK}/dp_ep" 1e-5)
  # Refusals, each before any work.
  set(Q ${COMMON} --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe/model" --max_steps 1
      --output_dir "${WORK}/refused")
  refused(2 "--ep_size 4: the world size 2 \\(mpirun -np or --nproc_per_node\\) does not divide"
          ${Q} --ep_size 4)
  refused(3 "--ep_size 3: the 4 experts of .*config.json \\(num_experts / num_local_experts\\) do not divide by it"
          ${Q} --ep_size 3)
  refused(2 "--ep_size 2 with --zero_stage 1 .*does not compose with it yet" ${Q} --ep_size 2
          --zero_stage 1)
  refused(4 "--ep_size 4: the world size 4 .*over --tp_size 2 \\(2 data-parallel ranks\\) does not divide"
          ${Q} --ep_size 4 --tp_size 2)
  refused(2 "--ep_size 2 with --use_peft: expert parallelism does not compose" ${Q} --ep_size 2
          --use_peft true)
  refused(2 "--ep_size 2: .*is not a mixture of experts, so there are no experts to split" ${Q}
          --ep_size 2 --model_name_or_path "${ROOT}/tests/fixtures/generate_text")
elseif(CASE STREQUAL "ep_tp")
  set(T ${COMMON} --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe/model" --max_steps 6
      --save_steps 3 --per_device_train_batch_size 2)
  # The reference: the same two data-parallel batches without tensor parallelism.
  run(2 0 ${T} --output_dir "${WORK}/dp2")
  run(4 0 ${T} --tp_size 2 --output_dir "${WORK}/tp2dp2")
  same("${WORK}/dp2" "${WORK}/tp2dp2" 1e-5)
  run(4 0 ${T} --tp_size 2 --ep_size 2 --output_dir "${WORK}/tp2ep2")
  if(NOT run_out MATCHES "2 data-parallel rank\\(s\\) × 2 tensor-parallel in expert-parallel groups of 2")
    message(FATAL_ERROR "the TP 2 × EP 2 run does not report its layout:\n${run_out}")
  endif()
  same("${WORK}/tp2dp2" "${WORK}/tp2ep2" 1e-5)
  same("${WORK}/tp2dp2/checkpoint-3" "${WORK}/tp2ep2/checkpoint-3" 1e-5)
  # The checkpoint holds the whole model and moments: resumed with TP 2 × EP 2 it is the
  # uninterrupted run bit for bit; resumed on DP 2 alone, that run within 1e-5.
  foreach(c resume_tp2ep2 resume_dp2)
    file(COPY "${WORK}/tp2ep2/checkpoint-3" DESTINATION "${WORK}/${c}")
  endforeach()
  run(4 0 ${T} --tp_size 2 --ep_size 2 --output_dir "${WORK}/resume_tp2ep2"
      --resume_from_checkpoint true)
  same("${WORK}/tp2ep2" "${WORK}/resume_tp2ep2" 0)
  run(2 0 ${T} --output_dir "${WORK}/resume_dp2" --resume_from_checkpoint true)
  same("${WORK}/dp2" "${WORK}/resume_dp2" 1e-5)
elseif(CASE STREQUAL "ep_memory")
  set(src "${ROOT}/tests/fixtures/trainer_moe/model")
  set(model "${WORK}/wide_moe")
  file(COPY "${src}/tokenizer.json" "${src}/tokenizer_config.json" DESTINATION "${model}")
  file(READ "${src}/config.json" config)
  string(REPLACE "\"num_local_experts\": 4" "\"num_local_experts\": 16" config "${config}")
  string(REPLACE "\"moe_intermediate_size\": 32" "\"moe_intermediate_size\": 256" config
         "${config}")
  file(WRITE "${model}/config.json" "${config}")
  run(2 0 ${COMMON} --model_name_or_path "${model}" --init_from_config true --max_steps 3
      --per_device_train_batch_size 2 --save_steps 2 --eval_strategy steps --eval_steps 2
      --eval_split_ratio 0.2 --output_dir "${WORK}/wide_ep2" --ep_size 2)
  if(NOT run_out MATCHES "arenas held at most ([0-9]+) resident bytes of ([0-9]+)")
    message(FATAL_ERROR "the EP 2 run does not report its arenas' resident bytes:\n${run_out}")
  endif()
  set(resident ${CMAKE_MATCH_1})
  set(total ${CMAKE_MATCH_2})
  math(EXPR percent "${resident} * 100 / ${total}")
  message(STATUS "EP 2: ${resident} of ${total} arena bytes resident (${percent}%)")
  if(percent GREATER 60 OR percent LESS 45)
    message(FATAL_ERROR "EP 2 keeps ${percent}% of its arenas resident, wanted 45-60% (its "
                        "own experts and the shared parameters):\n${run_out}")
  endif()
endif()
execute_process(COMMAND pgrep -f "${WORK}/" RESULT_VARIABLE rc OUTPUT_VARIABLE pids)
if(rc EQUAL 0)
  message(FATAL_ERROR "processes left behind: ${pids}")
endif()
