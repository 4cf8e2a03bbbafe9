# LoRA on a mixture of experts' stacks (--lora_target_parameters) under mpirun on the tiny
# Qwen3-MoE of tests/fixtures/trainer_moe: 2 data-parallel ranks with --zero_stage 1, 2 and 3
# write the same adapter, byte for byte, as plain data parallelism (ZeRO-3 gathers each layer's
# trainable parameters as one run of the arena: the experts' A and B sit with their layer's).
# (One process is no reference here: the load-balancing loss is summed per micro-batch, so
# other micro-batches give another loss.)
# Usage: cmake -DSFT=sft -DMPIRUN=mpirun -DROOT=repo -DWORK=scratch -P train_lora_experts_mpi.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${ROOT}/tests/fixtures/trainer_moe/model"
    --dataset_name "${ROOT}/tests/fixtures/train_cli/train.jsonl" --max_length 32 --max_steps 4
    --per_device_train_batch_size 2 --learning_rate 1e-2 --bf16 false --num_threads 1
    --save_strategy no --use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0
    --lora_target_modules q_proj v_proj --lora_target_parameters gate_up_proj down_proj)
foreach(z 0 1 2 3)
  execute_process(COMMAND "${MPIRUN}" --oversubscribe -np 2 "${SFT}" train ${COMMON}
                          --zero_stage ${z} --output_dir "${WORK}/z${z}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--zero_stage ${z}: exit ${rc}\n${out}\n${err}")
  endif()
  file(SHA256 "${WORK}/z${z}/adapter_model.safetensors" h${z})
  if(NOT h${z} STREQUAL h0)
    message(FATAL_ERROR "--zero_stage ${z} wrote another adapter than plain data parallelism")
  endif()
endforeach()
