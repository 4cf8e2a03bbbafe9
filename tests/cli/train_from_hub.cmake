# `sft train` with a model and a dataset given as Hub ids that are not in the cache: both are
# downloaded from the tests' Hub (sft_hub_test_server) into an empty HF cache laid out as
# huggingface_hub lays it out, training runs, and a second run with HF_HUB_OFFLINE=1 reads
# the same cache without the server. Then --push_to_hub publishes a run to the same server.
# Usage: cmake -DSFT=sft -DSERVER=sft_hub_test_server -DROOT=repo -DWORK=scratch -P ...
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{HF_HUB_CACHE} "${WORK}/hub")
set(ENV{SFT_CACHE_DIR} "${WORK}/tokens")
unset(ENV{HF_TOKEN})
unset(ENV{HF_HUB_OFFLINE})
set(TRAIN train --model_name_or_path org/tiny --dataset_name org/text --max_length 32
    --per_device_train_batch_size 2 --max_steps 2 --logging_steps 1 --num_threads 2
    --gradient_checkpointing false)

execute_process(COMMAND "${SERVER}" --model "org/tiny=${ROOT}/tests/fixtures/generate_text"
                        --dataset "org/text=${ROOT}/tests/fixtures/hub/dataset" --
                        "${SFT}" ${TRAIN} --output_dir "${WORK}/a"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft train from the test Hub: exit ${rc}\n${out}\n${err}")
endif()
if(NOT err MATCHES "downloading model org/tiny" OR NOT err MATCHES "downloading dataset org/text")
  message(FATAL_ERROR "no download progress line:\n${err}")
endif()
foreach(f "${WORK}/a/model.safetensors" "${WORK}/hub/models--org--tiny/refs/main")
  if(NOT EXISTS "${f}")
    message(FATAL_ERROR "missing ${f}\n${err}")
  endif()
endforeach()
file(READ "${WORK}/hub/models--org--tiny/refs/main" commit)
if(NOT commit MATCHES "^[0-9a-f]+$")
  message(FATAL_ERROR "refs/main holds '${commit}', not a bare commit")
endif()
file(READ_SYMLINK "${WORK}/hub/models--org--tiny/snapshots/${commit}/model.safetensors" link)
if(NOT link MATCHES "^\\.\\./\\.\\./blobs/[0-9a-f]+$")
  message(FATAL_ERROR "model.safetensors links to '${link}', not ../../blobs/<sha256>")
endif()

# Offline, no server: the cache alone serves the same ids.
set(ENV{HF_HUB_OFFLINE} 1)
execute_process(COMMAND "${SFT}" ${TRAIN} --output_dir "${WORK}/b"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR err MATCHES "downloading")
  message(FATAL_ERROR "offline run from the cache: exit ${rc}\n${out}\n${err}")
endif()
# Offline and not cached: the error says so and names the switch and the cache.
execute_process(COMMAND "${SFT}" ${TRAIN} --model_name_or_path org/absent --output_dir "${WORK}/c"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "HF_HUB_OFFLINE=1" OR NOT err MATCHES "${WORK}/hub")
  message(FATAL_ERROR "offline miss: exit ${rc}\n${out}\n${err}")
endif()

# --push_to_hub: the run's output_dir lands in a repo named like it under the token's user.
unset(ENV{HF_HUB_OFFLINE})
set(ENV{HF_TOKEN} hf_test_token)
execute_process(COMMAND "${SERVER}" --model "org/tiny=${ROOT}/tests/fixtures/generate_text"
                        --dataset "org/text=${ROOT}/tests/fixtures/hub/dataset"
                        --uploads "${WORK}/storage" --
                        "${SFT}" ${TRAIN} --output_dir "${WORK}/pushed" --push_to_hub
                        --save_steps 1
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
# every_save (the default): checkpoint-1 and checkpoint-2's model files, then the final push.
string(REGEX MATCHALL "pushed [0-9]+ files" pushes "${err}")
list(LENGTH pushes n_pushes)
if(NOT rc EQUAL 0 OR NOT n_pushes EQUAL 3 OR NOT err MATCHES "pushed [0-9]+ files \\(1 in LFS, 1 uploaded\\)")
  message(FATAL_ERROR "sft train --push_to_hub: exit ${rc}\n${out}\n${err}")
endif()
foreach(f model.safetensors config.json tokenizer.json trainer_state.json)
  file(SHA256 "${WORK}/pushed/${f}" want)
  file(SHA256 "${WORK}/storage/me/pushed/${f}" got)
  if(NOT want STREQUAL got)
    message(FATAL_ERROR "pushed ${f} differs from the run's")
  endif()
endforeach()
file(GLOB_RECURSE checkpoints "${WORK}/storage/me/pushed/checkpoint-*")
if(checkpoints)
  message(FATAL_ERROR "checkpoints were pushed: ${checkpoints}")
endif()
