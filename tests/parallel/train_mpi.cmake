# `sft train` under mpirun on the tiny Qwen3 of tests/fixtures/generate_text: one case per
# ctest entry (CASE), each well under a minute on 2 oversubscribed cores.
#   parity   np 1 vs 2 vs 4 (and --nproc_per_node 2) at the same global batch of 4 rows:
#            per-step loss, grad_norm, accuracy, entropy, num_tokens within 1e-5 relative over
#            10 steps, final weights within 1e-5; eval metrics of np 1 vs 2
#   zero1    --zero_stage 1 vs plain DP on 2 ranks (same tolerances; in fact the same weights),
#            also in bf16 with gradient checkpointing; optimizer state per rank halves;
#            --accelerate_config zero1 is the same run; stage 3 on one process is refused
#   zero2    --zero_stage 2 on np 2 and np 4 (and np 2 × 2 micro-batches) vs one process within
#            1e-5 over 10 steps; bit-equal to ZeRO-1 at one micro-batch
#   zero2_compose --deepspeed (the keys it ignores named), --accelerate_config zero2 and --fsdp
#            shard_grad_op are the same run; with LoRA; tp 2 × dp 2; a killed rank; a DeepSpeed
#            file that is not JSON or has stage 4 refused before any work
#   zero3    --zero_stage 3 (and --accelerate_config zero3, --fsdp "full_shard auto_wrap") on
#            np 2, np 4, np 2 × 2 micro-batches vs one process within 1e-5 over 10 steps; the
#            same bits as ZeRO-1 (np 2 and np 4, loaded or drawn with --init_from_config: each
#            ZeRO-3 rank reads or draws only its shard; an untied LM head too); bf16 + gradient checkpointing +
#            evaluation the same bits as DP; LoRA; tp 2 × dp 2
#   zero3_resume a ZeRO-3 checkpoint resumed under ZeRO-3 (bit for bit) and without ZeRO; a
#            killed rank
#   zero3_reshard ZeRO-3's checkpoint and export (written a tensor at a time) byte-identical to
#            plain DP's; a np 2 ZeRO-3 checkpoint resumed on np 1 and a np 1 one on np 2 ZeRO-3
#            (same rows per micro-batch) equal the uninterrupted runs within 1e-5
#   moe_resume a mixture of experts' checkpoint (the experts in the family's form on disk:
#            Qwen3-MoE per expert, gpt-oss transposed and interleaved) resumed under ZeRO-3 bit
#            for bit, and without ZeRO within 1e-5 (a router's load-balancing loss is per
#            micro-batch, so rows per micro-batch stay: np 2 again)
#   tp       tensor parallel: tp 2 (np 2) and tp 2 × dp 2 (np 4) vs one process, tp 4 on an
#            8-head model, ZeRO-1 with tp 2 × dp 2, bf16 + packing + gradient checkpointing
#            with tp 2; the same tolerances (bf16: 2e-3); the export is one HF model; an odd
#            vocabulary (703) over tp 2 (the padded split); layouts that do not divide are
#            refused naming the config field
#   tp_resume a tp 2 run resumed from its checkpoint-3 equals the uninterrupted run bit for
#            bit; the same checkpoint resumed with tp 1 and with tp 2 × dp 1 re-shards
#   packing  np 1 vs 2 with --packing
#   resume   a 2-rank run (ZeRO 0, 1, 2) resumed from its checkpoint-3 equals the uninterrupted
#            run bit for bit; resuming it on 1 rank with fewer rows per micro-batch fails naming
#            both world sizes and the batch size that would resume
#   faults   a rank SIGKILLed, a rank hung (with --ddp_timeout 3), a NaN loss on one rank:
#            every run exits non-zero in bounded time with the cause named, no process left;
#            SIGTERM to one rank: all stop after the same step, checkpoint saved, exit 0, and
#            the printed resume command (the mpirun launch) works; Ctrl-C to --nproc_per_node
#            with a save slower than mpirun's SIGKILL delay still saves; a failed check is
#            printed once
# Usage: cmake -DSFT=sft -DMPIRUN=mpirun -DCOMPARE=sft_compare_weights -DROOT=repo
#              -DWORK=scratch -DCASE=parity -P train_mpi.cmake
# The learning rate is small on purpose: Adam turns the last-bit differences of a
# differently ordered gradient sum into weight differences proportional to lr (at 1e-3 a few
# weights drift 1.8e-5 relative in 10 steps; at 2e-4 under 4e-6, while training moves the
# weights ~3e-3).
cmake_minimum_required(VERSION 3.25)
set(MODEL "${ROOT}/tests/fixtures/generate_text")
set(DATA "${ROOT}/tests/fixtures/train_cli/train.jsonl")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{SFT_CACHE_DIR} "${WORK}/cache")
set(COMMON --model_name_or_path "${MODEL}" --dataset_name "${DATA}" --max_length 32
    --learning_rate 2e-4 --logging_steps 1 --gradient_checkpointing false --bf16 false
    --disable_tqdm true --num_threads 1 --max_grad_norm 1.0 --weight_decay 0.01)

# run(<np or 0 for no mpirun> <expect: 0 or "fail"> <args...>): sets run_out, run_rc.
function(run np expect)
  if(np EQUAL 0)
    set(cmd "${SFT}" train ${ARGN})
  else()
    set(cmd "${MPIRUN}" --oversubscribe -np ${np} "${SFT}" train ${ARGN})
  endif()
  execute_process(COMMAND ${cmd} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
                  TIMEOUT 90)
  if((expect STREQUAL "0" AND NOT rc EQUAL 0) OR (expect STREQUAL "fail" AND rc EQUAL 0))
    message(FATAL_ERROR "${cmd}\nexit ${rc} (wanted ${expect})\n${out}\n${err}")
  endif()
  set(run_out "${out}${err}" PARENT_SCOPE)
  set(run_rc "${rc}" PARENT_SCOPE)
endfunction()

function(same_metrics a b tol)  # [keys]: only these metrics (comma-separated)
  execute_process(COMMAND "${COMPARE}" --metrics "${a}" "${b}" ${tol} ${ARGN} OUTPUT_VARIABLE out
                  ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "${a} vs ${b}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "metrics of ${a} and ${b} differ by more than ${tol}:\n${out}${err}")
  endif()
endfunction()
function(same_weights a b tol)
  execute_process(COMMAND "${COMPARE}" "${a}" "${b}" ${tol} OUTPUT_VARIABLE out
                  ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "${a} vs ${b}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weights of ${a} and ${b} differ by more than ${tol}:\n${out}${err}")
  endif()
endfunction()

# No process of this case's runs may outlive them (the output folders are in every command).
function(no_leftovers)
  execute_process(COMMAND pgrep -f "${WORK}/" OUTPUT_VARIABLE pids RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    message(FATAL_ERROR "processes left behind: ${pids}")
  endif()
endfunction()

set(STEPS --max_steps 10 --save_strategy no)
if(CASE STREQUAL "parity")
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/np2")
  if(NOT run_out MATCHES "global batch 4 rows.*2 data-parallel rank")
    message(FATAL_ERROR "the 2-rank run does not report its layout:\n${run_out}")
  endif()
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --output_dir "${WORK}/np4")
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/nproc2"
      --nproc_per_node 2)
  foreach(other np2 np4 nproc2)
    same_metrics("${WORK}/np1" "${WORK}/${other}" 1e-5)
    same_weights("${WORK}/np1" "${WORK}/${other}" 1e-5)
  endforeach()
  # The same layout twice: the same bits.
  same_weights("${WORK}/np2" "${WORK}/nproc2" 0)
  # Evaluation: each rank scores every n-th eval batch; the sums give one process's metrics.
  set(E --max_steps 4 --save_strategy no --eval_strategy steps --eval_steps 2
      --eval_split_ratio 0.25 --per_device_eval_batch_size 1)
  run(0 0 ${COMMON} ${E} --per_device_train_batch_size 4 --output_dir "${WORK}/eval1")
  run(2 0 ${COMMON} ${E} --per_device_train_batch_size 2 --output_dir "${WORK}/eval2")
  same_metrics("${WORK}/eval1" "${WORK}/eval2" 1e-5)
elseif(CASE STREQUAL "zero1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/dp")
  string(REGEX MATCH "optimizer state ([0-9]+) bytes per rank" _ "${run_out}")
  set(dp_bytes "${CMAKE_MATCH_1}")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z1"
      --zero_stage 1)
  string(REGEX MATCH "optimizer state ([0-9]+) bytes per rank \\(ZeRO-1\\)" _ "${run_out}")
  set(z1_bytes "${CMAKE_MATCH_1}")
  message(STATUS "optimizer state per rank: DP ${dp_bytes} bytes, ZeRO-1 ${z1_bytes} bytes")
  math(EXPR half "${dp_bytes} / 2")
  if(NOT z1_bytes OR z1_bytes GREATER half)
    message(FATAL_ERROR "ZeRO-1 keeps ${z1_bytes} bytes per rank, DP ${dp_bytes}:\n${run_out}")
  endif()
  same_metrics("${WORK}/dp" "${WORK}/z1" 1e-5)
  same_weights("${WORK}/dp" "${WORK}/z1" 1e-5)
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/acc"
      --accelerate_config zero1)
  same_weights("${WORK}/z1" "${WORK}/acc" 0)
  # bf16 compute with gradient checkpointing: the all-gathered bf16 copies are the same too.
  set(B ${STEPS} --per_device_train_batch_size 2 --bf16 true --gradient_checkpointing true)
  run(2 0 ${COMMON} ${B} --output_dir "${WORK}/dp_bf16")
  run(2 0 ${COMMON} ${B} --output_dir "${WORK}/z1_bf16" --zero_stage 1)
  same_metrics("${WORK}/dp_bf16" "${WORK}/z1_bf16" 1e-12)
  same_weights("${WORK}/dp_bf16" "${WORK}/z1_bf16" 0)
  # ZeRO-3 on one process: refused before any work, nothing written.
  run(0 fail ${COMMON} ${STEPS} --output_dir "${WORK}/z3" --zero_stage 3)
  if(NOT run_out MATCHES "--zero_stage 3 asks for ZeRO-3.*with 1 process\\(es\\).*hint: launch several"
     OR EXISTS "${WORK}/z3")
    message(FATAL_ERROR "--zero_stage 3 on one process is not refused clearly:\n${run_out}")
  endif()
elseif(CASE STREQUAL "zero2")
  # np 2 and np 4 vs one process at the same global batch of 4 rows, and the same global batch
  # in 2 micro-batches (the reduce-scatter after each adds into the own shard).
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z2np2"
      --zero_stage 2)
  string(REGEX MATCH "optimizer state ([0-9]+) bytes per rank \\(ZeRO-2\\)" _ "${run_out}")
  set(z2_bytes "${CMAKE_MATCH_1}")
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --output_dir "${WORK}/z2np4"
      --zero_stage 2)
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --gradient_accumulation_steps 2
      --output_dir "${WORK}/gas_np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --gradient_accumulation_steps 2
      --output_dir "${WORK}/gas_z2np2" --zero_stage 2)
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z1np2"
      --zero_stage 1)
  string(REGEX MATCH "optimizer state ([0-9]+) bytes per rank \\(ZeRO-1\\)" _ "${run_out}")
  if(NOT z2_bytes OR NOT z2_bytes EQUAL CMAKE_MATCH_1)
    message(FATAL_ERROR "ZeRO-2 keeps ${z2_bytes} bytes of optimizer state per rank, ZeRO-1 ${CMAKE_MATCH_1}")
  endif()
  foreach(other z2np2 z2np4)
    same_metrics("${WORK}/np1" "${WORK}/${other}" 1e-5)
    same_weights("${WORK}/np1" "${WORK}/${other}" 1e-5)
  endforeach()
  same_metrics("${WORK}/gas_np1" "${WORK}/gas_z2np2" 1e-5)
  same_weights("${WORK}/gas_np1" "${WORK}/gas_z2np2" 1e-5)
  # One micro-batch a step: the same sums as ZeRO-1's reduce-scatter, so the same bits.
  same_weights("${WORK}/z1np2" "${WORK}/z2np2" 0)
elseif(CASE STREQUAL "zero2_compose")
  # TRL's spellings of stage 2 are the same run.
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z2np2"
      --zero_stage 2)
  file(WRITE "${WORK}/ds_zero2.json"
       "{\"zero_optimization\": {\"stage\": 2, \"overlap_comm\": true}, \"bf16\": {\"enabled\": \"auto\"}}")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/ds"
      --deepspeed "${WORK}/ds_zero2.json")
  if(NOT run_out MATCHES "key 'zero_optimization.overlap_comm' is ignored"
     OR NOT run_out MATCHES "key 'bf16' is ignored")
    message(FATAL_ERROR "--deepspeed does not name the keys it ignores:\n${run_out}")
  endif()
  same_weights("${WORK}/z2np2" "${WORK}/ds" 0)
  foreach(spelling "--accelerate_config;zero2" "--fsdp;shard_grad_op auto_wrap")
    string(MD5 tag "${spelling}")
    run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/${tag}"
        ${spelling})
    same_weights("${WORK}/z2np2" "${WORK}/${tag}" 0)
  endforeach()
  # With LoRA (only the adapters train, and only they are sharded; no dropout, whose masks
  # depend on the rank).
  set(L ${STEPS} --use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0 --learning_rate 1e-3)
  run(0 0 ${COMMON} ${L} --per_device_train_batch_size 4 --output_dir "${WORK}/lora_np1")
  run(2 0 ${COMMON} ${L} --per_device_train_batch_size 2 --output_dir "${WORK}/lora_z2"
      --zero_stage 2)
  same_metrics("${WORK}/lora_np1" "${WORK}/lora_z2" 1e-5)
  # Inside the data-parallel group of tp 2 × dp 2.
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/tp2z2"
      --tp_size 2 --zero_stage 2)
  same_metrics("${WORK}/np1" "${WORK}/tp2z2" 1e-5)
  same_weights("${WORK}/np1" "${WORK}/tp2z2" 1e-5)
  # A killed rank ends the job, the last checkpoint intact, no process left.
  set(ENV{SFT_TEST_FAULT} "kill:1:3")
  run(2 fail ${COMMON} --max_steps 6 --save_steps 2 --per_device_train_batch_size 2
      --output_dir "${WORK}/kill" --zero_stage 2)
  unset(ENV{SFT_TEST_FAULT})
  if(NOT EXISTS "${WORK}/kill/checkpoint-2/sft_checkpoint.json")
    message(FATAL_ERROR "after a killed ZeRO-2 rank checkpoint-2 is not intact:\n${run_out}")
  endif()
  no_leftovers()
  # Bad input: refused before any work, nothing written.
  file(WRITE "${WORK}/broken.json" "{\n  \"zero_optimization\": {\"stage\": 2,}\n}\n")
  run(2 fail ${COMMON} ${STEPS} --output_dir "${WORK}/broken" --deepspeed "${WORK}/broken.json")
  if(NOT run_out MATCHES "${WORK}/broken.json.*line 2, column" OR EXISTS "${WORK}/broken")
    message(FATAL_ERROR "a DeepSpeed file that is not JSON is not refused clearly:\n${run_out}")
  endif()
  file(WRITE "${WORK}/four.json" "{\"zero_optimization\": {\"stage\": 4}}")
  run(0 fail ${COMMON} ${STEPS} --output_dir "${WORK}/four" --deepspeed "${WORK}/four.json")
  if(NOT run_out MATCHES "zero_optimization.stage.*must be 0, 1, 2 or 3, got 4" OR EXISTS "${WORK}/four")
    message(FATAL_ERROR "DeepSpeed stage 4 is not refused clearly:\n${run_out}")
  endif()
  no_leftovers()
elseif(CASE STREQUAL "zero3")
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z3np2"
      --zero_stage 3)
  if(NOT run_out MATCHES "bytes per rank \\(ZeRO-3\\)")
    message(FATAL_ERROR "the ZeRO-3 run does not say so:\n${run_out}")
  endif()
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --output_dir "${WORK}/z3np4"
      --accelerate_config zero3)
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --gradient_accumulation_steps 2
      --output_dir "${WORK}/gas_np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --gradient_accumulation_steps 2
      --output_dir "${WORK}/gas_z3np2" --fsdp "full_shard auto_wrap")
  foreach(pair "np1;z3np2" "np1;z3np4" "gas_np1;gas_z3np2")
    list(GET pair 0 a)
    list(GET pair 1 b)
    same_metrics("${WORK}/${a}" "${WORK}/${b}" 1e-5)
    same_weights("${WORK}/${a}" "${WORK}/${b}" 1e-5)
  endforeach()
  # One micro-batch a step: the same sums as ZeRO-1 and ZeRO-2, so the same bits.
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/z1np2"
      --zero_stage 1)
  same_weights("${WORK}/z1np2" "${WORK}/z3np2" 0)
  # bf16 compute with gradient checkpointing (the bf16 copies gathered with the weights, the
  # recomputation inside the gathered layer), with evaluation (its forward gathers too).
  set(B ${STEPS} --per_device_train_batch_size 2 --bf16 true --gradient_checkpointing true
      --eval_strategy steps --eval_steps 5 --eval_split_ratio 0.25)
  run(2 0 ${COMMON} ${B} --output_dir "${WORK}/dp_bf16")
  run(2 0 ${COMMON} ${B} --output_dir "${WORK}/z3_bf16" --zero_stage 3)
  same_metrics("${WORK}/dp_bf16" "${WORK}/z3_bf16" 1e-12)
  same_weights("${WORK}/dp_bf16" "${WORK}/z3_bf16" 0)
  # Each ZeRO-3 rank reads, or draws (--init_from_config), only its shard of the model: the
  # same values as a whole load, so the same bits as ZeRO-1 (which loads the whole model).
  set(I ${STEPS} --per_device_train_batch_size 2 --init_from_config true --seed 7)
  run(2 0 ${COMMON} ${I} --output_dir "${WORK}/init_z1" --zero_stage 1)
  run(2 0 ${COMMON} ${I} --output_dir "${WORK}/init_z3" --zero_stage 3)
  same_weights("${WORK}/init_z1" "${WORK}/init_z3" 0)
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 1 --output_dir "${WORK}/z1np4"
      --zero_stage 1)
  same_weights("${WORK}/z1np4" "${WORK}/z3np4" 0)
  # An untied LM head (the fixture's config with tie_word_embeddings false, drawn): its gradient
  # reduce-scattered block by block as the fused head finishes it, the same bits as ZeRO-1.
  file(COPY "${MODEL}/" DESTINATION "${WORK}/untied")
  file(READ "${MODEL}/config.json" config)
  string(REGEX REPLACE "\"tie_word_embeddings\": *true" "\"tie_word_embeddings\": false"
         config "${config}")
  if(NOT config MATCHES "\"tie_word_embeddings\": false")
    message(FATAL_ERROR "the fixture's config does not tie its embeddings: update this case")
  endif()
  file(WRITE "${WORK}/untied/config.json" "${config}")
  string(REPLACE "${MODEL}" "${WORK}/untied" U "${COMMON}")
  run(2 0 ${U} ${I} --output_dir "${WORK}/untied_z1" --zero_stage 1)
  run(2 0 ${U} ${I} --output_dir "${WORK}/untied_z3" --zero_stage 3)
  same_weights("${WORK}/untied_z1" "${WORK}/untied_z3" 0)
  same_metrics("${WORK}/untied_z1" "${WORK}/untied_z3" 0)
  # LoRA (the adapters sharded) and tp 2 × dp 2.
  set(L ${STEPS} --use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0 --learning_rate 1e-3)
  run(0 0 ${COMMON} ${L} --per_device_train_batch_size 4 --output_dir "${WORK}/lora_np1")
  run(2 0 ${COMMON} ${L} --per_device_train_batch_size 2 --output_dir "${WORK}/lora_z3"
      --zero_stage 3)
  same_metrics("${WORK}/lora_np1" "${WORK}/lora_z3" 1e-5)
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/tp2z3"
      --tp_size 2 --zero_stage 3)
  same_metrics("${WORK}/np1" "${WORK}/tp2z3" 1e-5)
  same_weights("${WORK}/np1" "${WORK}/tp2z3" 1e-5)
elseif(CASE STREQUAL "zero3_resume")
  # Checkpoints hold the whole model: resumed under ZeRO-3 it continues bit for bit, and the
  # same checkpoint resumes without ZeRO (the files are the same as a plain run's).
  set(R ${COMMON} --max_steps 6 --save_steps 3 --per_device_train_batch_size 2)
  run(2 0 ${R} --output_dir "${WORK}/full" --zero_stage 3)
  file(COPY "${WORK}/full/checkpoint-3" DESTINATION "${WORK}/resumed")
  run(2 0 ${R} --output_dir "${WORK}/resumed" --resume_from_checkpoint true --zero_stage 3)
  same_metrics("${WORK}/full" "${WORK}/resumed" 0)
  same_weights("${WORK}/full" "${WORK}/resumed" 0)
  file(COPY "${WORK}/full/checkpoint-3" DESTINATION "${WORK}/plain")
  run(2 0 ${R} --output_dir "${WORK}/plain" --resume_from_checkpoint true)
  same_metrics("${WORK}/full" "${WORK}/plain" 1e-5)
  same_weights("${WORK}/full" "${WORK}/plain" 1e-5)
  same_weights("${WORK}/full/checkpoint-3" "${WORK}/plain/checkpoint-3" 0)
  # A killed rank ends the job, the last checkpoint intact, no process left.
  set(ENV{SFT_TEST_FAULT} "kill:1:3")
  run(2 fail ${COMMON} --max_steps 6 --save_steps 2 --per_device_train_batch_size 2
      --output_dir "${WORK}/kill" --zero_stage 3)
  unset(ENV{SFT_TEST_FAULT})
  if(NOT EXISTS "${WORK}/kill/checkpoint-2/sft_checkpoint.json")
    message(FATAL_ERROR "after a killed ZeRO-3 rank checkpoint-2 is not intact:\n${run_out}")
  endif()
  no_leftovers()
elseif(CASE STREQUAL "zero3_reshard")
  # Checkpoints and the export under ZeRO-3 are written a tensor at a time from the shards: the
  # same bytes as plain DP's whole-model files (the runs are the same bits at one micro-batch).
  set(R ${COMMON} --max_steps 4 --save_steps 2)
  run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/dp")
  run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/z3" --zero_stage 3)
  foreach(f checkpoint-2/model.safetensors checkpoint-2/optimizer.safetensors model.safetensors)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/dp/${f}" "${WORK}/z3/${f}"
                    RESULT_VARIABLE differ)
    if(differ)
      message(FATAL_ERROR "ZeRO-3's ${f} differs from plain DP's")
    endif()
  endforeach()
  # Another world size at the same rows per micro-batch: np 2 ZeRO-3 -> np 1, np 1 -> np 2
  # ZeRO-3 (the moments re-sharded as they are read), as the uninterrupted runs.
  file(COPY "${WORK}/z3/checkpoint-2" DESTINATION "${WORK}/to_np1")
  run(0 0 ${R} --per_device_train_batch_size 4 --output_dir "${WORK}/to_np1"
      --resume_from_checkpoint true)
  if(NOT run_out MATCHES "written by 2 data-parallel rank\\(s\\)\\) with 1")
    message(FATAL_ERROR "the resume on another world size does not say so:\n${run_out}")
  endif()
  same_metrics("${WORK}/z3" "${WORK}/to_np1" 1e-5)
  same_weights("${WORK}/z3" "${WORK}/to_np1" 1e-5)
  run(0 0 ${R} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  file(COPY "${WORK}/np1/checkpoint-2" DESTINATION "${WORK}/to_z3np2")
  run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/to_z3np2"
      --resume_from_checkpoint true --zero_stage 3)
  same_metrics("${WORK}/np1" "${WORK}/to_z3np2" 1e-5)
  same_weights("${WORK}/np1" "${WORK}/to_z3np2" 1e-5)
elseif(CASE STREQUAL "moe_resume")
  # The resume reads the experts back through the load's conversion (model/moe_checkpoint.h);
  # the moments are sft's stacks, each rank reading its shard of them.
  foreach(m trainer_moe trainer_moe_gpt_oss)
    string(REPLACE "${MODEL}" "${ROOT}/tests/fixtures/${m}/model" R "${COMMON}")
    list(APPEND R --max_steps 6 --save_steps 3)
    run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/${m}" --zero_stage 3)
    file(COPY "${WORK}/${m}/checkpoint-3" DESTINATION "${WORK}/${m}_z3")
    run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/${m}_z3"
        --resume_from_checkpoint true --zero_stage 3)
    same_metrics("${WORK}/${m}" "${WORK}/${m}_z3" 0)
    same_weights("${WORK}/${m}" "${WORK}/${m}_z3" 0)
    file(COPY "${WORK}/${m}/checkpoint-3" DESTINATION "${WORK}/${m}_dp")
    run(2 0 ${R} --per_device_train_batch_size 2 --output_dir "${WORK}/${m}_dp"
        --resume_from_checkpoint true)
    same_metrics("${WORK}/${m}" "${WORK}/${m}_dp" 1e-5)
    same_weights("${WORK}/${m}" "${WORK}/${m}_dp" 1e-5)
  endforeach()
  no_leftovers()
elseif(CASE STREQUAL "tp")
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --output_dir "${WORK}/tp2"
      --tp_size 2)
  if(NOT run_out MATCHES "global batch 4 rows.*1 data-parallel rank\\(s\\) × 2 tensor-parallel")
    message(FATAL_ERROR "the tp 2 run does not report its layout:\n${run_out}")
  endif()
  set(ENV{TP_SIZE} 2)  # TRL's environment variable, as --tp_size
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/tp2dp2")
  unset(ENV{TP_SIZE})
  run(4 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --output_dir "${WORK}/tp2z1"
      --tp_size 2 --zero_stage 1)
  foreach(other tp2 tp2dp2 tp2z1)
    same_metrics("${WORK}/np1" "${WORK}/${other}" 1e-5)
    same_weights("${WORK}/np1" "${WORK}/${other}" 1e-5)
  endforeach()
  # bf16 with packing and gradient checkpointing: the collectives sum the same bf16-rounded
  # partial products in another order, so the runs agree to bf16's precision (the accuracy,
  # a count of argmax hits, can flip a near tie: not compared).
  set(B ${STEPS} --per_device_train_batch_size 2 --bf16 true --packing true --max_length 64
      --gradient_checkpointing true)
  run(0 0 ${COMMON} ${B} --output_dir "${WORK}/bf16_np1")
  run(2 0 ${COMMON} ${B} --output_dir "${WORK}/bf16_tp2" --tp_size 2)
  same_metrics("${WORK}/bf16_np1" "${WORK}/bf16_tp2" 2e-3 "loss,grad_norm,entropy,num_tokens")
  # tp 4 needs 4 kv heads: an 8-head model initialised from its config (the fixture's
  # tokenizer; a vocabulary padded to 704 rows, as Qwen pads its own).
  file(MAKE_DIRECTORY "${WORK}/wide")
  file(COPY "${MODEL}/tokenizer.json" "${MODEL}/tokenizer_config.json" DESTINATION "${WORK}/wide")
  file(READ "${MODEL}/config.json" cfg)
  string(JSON cfg SET "${cfg}" num_attention_heads 8)
  string(JSON cfg SET "${cfg}" num_key_value_heads 4)
  string(JSON cfg SET "${cfg}" head_dim 8)
  string(JSON cfg SET "${cfg}" vocab_size 704)
  file(WRITE "${WORK}/wide/config.json" "${cfg}")
  # Its random weights make Adam more sensitive to last-bit gradient differences than the
  # fixture's (plain DP on 4 ranks drifts 4.7e-5 at lr 2e-4), so it trains at the target
  # command's 2e-5.
  set(W ${COMMON} ${STEPS} --per_device_train_batch_size 4 --init_from_config true
      --model_name_or_path "${WORK}/wide" --learning_rate 2e-5)
  run(0 0 ${W} --output_dir "${WORK}/wide_np1")
  run(4 0 ${W} --output_dir "${WORK}/wide_tp4" --tp_size 4)
  same_metrics("${WORK}/wide_np1" "${WORK}/wide_tp4" 1e-5)
  same_weights("${WORK}/wide_np1" "${WORK}/wide_tp4" 1e-5)
  # A vocabulary that does not divide (703 rows over tp 2: 352 a rank, the last one padding,
  # as Qwen3's 151936 over 3): the same run as one process, and the export holds 703 rows.
  file(MAKE_DIRECTORY "${WORK}/odd")
  file(COPY "${MODEL}/tokenizer.json" "${MODEL}/tokenizer_config.json" DESTINATION "${WORK}/odd")
  file(READ "${MODEL}/config.json" cfg)
  string(JSON cfg SET "${cfg}" vocab_size 703)
  file(WRITE "${WORK}/odd/config.json" "${cfg}")
  set(O ${COMMON} ${STEPS} --per_device_train_batch_size 4 --init_from_config true
      --model_name_or_path "${WORK}/odd" --learning_rate 2e-5)
  run(0 0 ${O} --output_dir "${WORK}/odd_np1")
  run(2 0 ${O} --output_dir "${WORK}/odd_tp2" --tp_size 2)
  same_metrics("${WORK}/odd_np1" "${WORK}/odd_tp2" 1e-5)
  same_weights("${WORK}/odd_np1" "${WORK}/odd_tp2" 1e-5)
  # Layouts that cannot be split.
  run(4 fail ${COMMON} ${STEPS} --output_dir "${WORK}/bad_kv" --tp_size 4)
  if(NOT run_out MATCHES "num_key_value_heads \\(2\\) does not divide by the tensor-parallel size 4")
    message(FATAL_ERROR "--tp_size 4 with 2 kv heads is not refused clearly:\n${run_out}")
  endif()
  run(3 fail ${COMMON} ${STEPS} --output_dir "${WORK}/bad_world" --tp_size 2)
  if(NOT run_out MATCHES "world size 3 does not divide by tp_size 2")
    message(FATAL_ERROR "3 ranks with --tp_size 2 are not refused clearly:\n${run_out}")
  endif()
  # A tensor-parallel rank killed, or hung: the other rank stops, naming the collective.
  set(F ${COMMON} --max_steps 6 --save_steps 2 --per_device_train_batch_size 2 --tp_size 2)
  set(ENV{SFT_TEST_FAULT} "kill:1:3")
  run(2 fail ${F} --output_dir "${WORK}/tp_kill")
  if(NOT EXISTS "${WORK}/tp_kill/checkpoint-2/sft_checkpoint.json")
    message(FATAL_ERROR "after a killed tp rank checkpoint-2 is not intact:\n${run_out}")
  endif()
  set(ENV{SFT_TEST_FAULT} "hang:1:3")
  run(2 fail ${F} --output_dir "${WORK}/tp_hang" --ddp_timeout 3)
  if(NOT run_out MATCHES "rank 0 of 2: collective all_reduce_sum\\(f32\\).*has not completed")
    message(FATAL_ERROR "a hung tp rank is not named by the watchdog:\n${run_out}")
  endif()
  unset(ENV{SFT_TEST_FAULT})
  no_leftovers()
elseif(CASE STREQUAL "tp_resume")
  set(R --max_steps 6 --save_steps 3 --per_device_train_batch_size 2)
  run(2 0 ${COMMON} ${R} --output_dir "${WORK}/full" --tp_size 2)
  file(COPY "${WORK}/full/checkpoint-3" DESTINATION "${WORK}/resumed")
  run(2 0 ${COMMON} ${R} --output_dir "${WORK}/resumed" --resume_from_checkpoint true --tp_size 2)
  same_metrics("${WORK}/full" "${WORK}/resumed" 0)
  same_weights("${WORK}/full" "${WORK}/resumed" 0)
  # The checkpoint is the whole model: another tp size re-shards it.
  file(COPY "${WORK}/full/checkpoint-3" DESTINATION "${WORK}/tp1")
  run(0 0 ${COMMON} ${R} --output_dir "${WORK}/tp1" --resume_from_checkpoint true)
  same_metrics("${WORK}/full" "${WORK}/tp1" 1e-5)
  same_weights("${WORK}/full" "${WORK}/tp1" 1e-5)
elseif(CASE STREQUAL "packing")
  # 64-token packs make 8 rows, whole global batches of 4 (one process would otherwise end
  # an epoch with a short batch where several ranks complete it from the epoch's start, as
  # accelerate's even_batches does).
  run(0 0 ${COMMON} ${STEPS} --per_device_train_batch_size 4 --packing true --max_length 64
      --output_dir "${WORK}/np1")
  run(2 0 ${COMMON} ${STEPS} --per_device_train_batch_size 2 --packing true --max_length 64
      --output_dir "${WORK}/np2")
  same_metrics("${WORK}/np1" "${WORK}/np2" 1e-5)
  same_weights("${WORK}/np1" "${WORK}/np2" 1e-5)
elseif(CASE STREQUAL "resume")
  foreach(z 0 1 2)
    set(R --max_steps 6 --save_steps 3 --per_device_train_batch_size 2 --zero_stage ${z})
    run(2 0 ${COMMON} ${R} --output_dir "${WORK}/full${z}")
    file(COPY "${WORK}/full${z}/checkpoint-3" DESTINATION "${WORK}/resumed${z}")
    run(2 0 ${COMMON} ${R} --output_dir "${WORK}/resumed${z}" --resume_from_checkpoint true)
    same_metrics("${WORK}/full${z}" "${WORK}/resumed${z}" 0)
    same_weights("${WORK}/full${z}" "${WORK}/resumed${z}" 0)
  endforeach()
  file(COPY "${WORK}/full0/checkpoint-3" DESTINATION "${WORK}/other")
  run(0 fail ${COMMON} ${R} --output_dir "${WORK}/other" --resume_from_checkpoint true)
  if(NOT run_out MATCHES "world_size.*written with 2, this run has 1.*hint: resume with as many processes as the interrupted run: mpirun -np 2 "
     OR NOT run_out MATCHES "or with 1 process\\(es\\) --per_device_train_batch_size 4, for the same 4 rows"
     OR run_out MATCHES "--world_size")
    message(FATAL_ERROR "resuming a 2-rank checkpoint on 1 rank does not say why:\n${run_out}")
  endif()
  # On 3 ranks every rank refuses it alike: said once, by rank 0.
  file(COPY "${WORK}/full0/checkpoint-3" DESTINATION "${WORK}/other3")
  run(3 fail ${COMMON} ${R} --output_dir "${WORK}/other3" --resume_from_checkpoint true)
  string(REGEX MATCHALL "written with 2, this run has 3" said "${run_out}")
  list(LENGTH said times)
  if(NOT times EQUAL 1 OR NOT run_out MATCHES "mpirun -np 2 ")
    message(FATAL_ERROR "a refused resume printed ${times} times:\n${run_out}")
  endif()
elseif(CASE STREQUAL "faults")
  set(F ${COMMON} --max_steps 6 --save_steps 2 --per_device_train_batch_size 2)
  set(ENV{SFT_TEST_FAULT} "kill:1:3")
  string(TIMESTAMP t0 "%s")
  run(2 fail ${F} --output_dir "${WORK}/kill")
  string(TIMESTAMP t1 "%s")
  math(EXPR took "${t1} - ${t0}")
  message(STATUS "killed rank: exit ${run_rc} after ${took} s")
  if(NOT EXISTS "${WORK}/kill/checkpoint-2/sft_checkpoint.json" OR took GREATER 60)
    message(FATAL_ERROR "after a killed rank: ${took} s, checkpoint-2 intact?\n${run_out}")
  endif()
  no_leftovers()

  set(ENV{SFT_TEST_FAULT} "hang:1:3")
  run(2 fail ${F} --output_dir "${WORK}/hang" --ddp_timeout 3)
  if(NOT run_out MATCHES "rank 0 of 2: collective all_reduce_sum\\(f32\\).*has not completed")
    message(FATAL_ERROR "a hung rank is not named by the watchdog:\n${run_out}")
  endif()
  no_leftovers()

  set(ENV{SFT_TEST_FAULT} "nan:1:3")
  run(2 fail ${F} --output_dir "${WORK}/nan")
  if(NOT run_out MATCHES "non-finite step 3" OR EXISTS "${WORK}/nan/checkpoint-4")
    message(FATAL_ERROR "a NaN loss on rank 1 did not stop every rank:\n${run_out}")
  endif()
  no_leftovers()

  # SIGTERM reaching rank 1 only: both ranks stop after the same step, rank 0 saves it.
  set(ENV{SFT_TEST_FAULT} "term:1:3")
  run(2 0 ${F} --output_dir "${WORK}/term")
  if(NOT run_out MATCHES "stopped at step 3" OR NOT EXISTS "${WORK}/term/checkpoint-3")
    message(FATAL_ERROR "a stop request to one rank did not stop both at step 3:\n${run_out}")
  endif()
  no_leftovers()
  unset(ENV{SFT_TEST_FAULT})
  # The printed resume command is the launch as typed (mpirun and its flags), and it works.
  if(NOT run_out MATCHES "resume with:\n  ([^\n]*)")
    message(FATAL_ERROR "no resume command:\n${run_out}")
  endif()
  set(resume "${CMAKE_MATCH_1}")
  string(FIND "${resume}" "${MPIRUN} --oversubscribe -np 2 ${SFT} train " at)
  if(NOT at EQUAL 0 OR resume MATCHES "world_size"
     OR NOT resume MATCHES "--resume_from_checkpoint ${WORK}/term/checkpoint-3$")
    message(FATAL_ERROR "the resume command is not the mpirun launch:\n${resume}")
  endif()
  execute_process(COMMAND sh -c "${resume}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc TIMEOUT 90)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK}/term/model.safetensors")
    message(FATAL_ERROR "the printed resume command failed (exit ${rc}):\n${resume}\n${out}${err}")
  endif()
  no_leftovers()

  # Ctrl-C to `sft train --nproc_per_node 2` (SIGINT to the launcher at step 3) with saves
  # slower than mpirun's 1 s from SIGTERM to SIGKILL: every rank still stops after step 3 and
  # checkpoint-3 is complete (mpirun's own SIGINT handling would kill the save).
  set(ENV{SFT_TEST_FAULT} "int:0:3")
  set(ENV{SFT_TEST_SLOW_SAVE} "2.5")
  run(0 0 ${F} --output_dir "${WORK}/int" --nproc_per_node 2)
  unset(ENV{SFT_TEST_FAULT})
  unset(ENV{SFT_TEST_SLOW_SAVE})
  if(NOT run_out MATCHES "stopped at step 3" OR NOT EXISTS "${WORK}/int/checkpoint-3/sft_checkpoint.json"
     OR NOT run_out MATCHES "resume with:\n  sft train --nproc_per_node 2 ")
    message(FATAL_ERROR "Ctrl-C under --nproc_per_node did not save checkpoint-3:\n${run_out}")
  endif()
  no_leftovers()

  # Ctrl-C to the user's own mpirun with the same slow save: mpirun's SIGKILL ends the save
  # (no sft can outlive it), and rank 0 says so and how to stop instead.
  set(ENV{SFT_TEST_FAULT} "int:0:3")
  set(ENV{SFT_TEST_SLOW_SAVE} "2.5")
  run(2 fail ${F} --output_dir "${WORK}/mpirun_int")
  unset(ENV{SFT_TEST_FAULT})
  unset(ENV{SFT_TEST_SLOW_SAVE})
  if(NOT run_out MATCHES "SIGKILLs every rank 1 s later.*kill -USR1 [0-9]+")
    message(FATAL_ERROR "Ctrl-C to mpirun does not say how to stop with a checkpoint:\n${run_out}")
  endif()
  no_leftovers()

  # A failed check is every rank's: said once, by rank 0 (and info lines once too).
  file(MAKE_DIRECTORY "${WORK}/used")
  file(WRITE "${WORK}/used/notes.txt" "x")
  run(2 fail ${F} --output_dir "${WORK}/used")
  string(REGEX MATCHALL "already exists and is not empty" said "${run_out}")
  list(LENGTH said times)
  if(NOT times EQUAL 1 OR run_out MATCHES "rank 1 of 2")
    message(FATAL_ERROR "a failed check printed ${times} times:\n${run_out}")
  endif()
  no_leftovers()
  # Model files every rank fails to load alike: once too.
  file(MAKE_DIRECTORY "${WORK}/bad_model")
  file(COPY "${MODEL}/config.json" "${MODEL}/tokenizer.json" DESTINATION "${WORK}/bad_model")
  file(WRITE "${WORK}/bad_model/model.safetensors" "not safetensors")
  run(2 fail ${F} --output_dir "${WORK}/bad_load" --model_name_or_path "${WORK}/bad_model")
  string(REGEX MATCHALL "error: [^\n]*model.safetensors" said "${run_out}")
  list(LENGTH said times)
  if(NOT times EQUAL 1)
    message(FATAL_ERROR "a model no rank can load printed ${times} errors:\n${run_out}")
  endif()
  no_leftovers()
else()
  message(FATAL_ERROR "unknown CASE ${CASE}")
endif()
