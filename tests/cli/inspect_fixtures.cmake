# Runs `sft inspect` on every fixture model and checks that the parameter count it prints
# equals transformers' num_parameters from tests/fixtures/models/expected.json.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -P inspect_fixtures.cmake
file(READ "${ROOT}/tests/fixtures/models/expected.json" expected)
foreach(name llama mistral qwen2 qwen3 qwen3_sharded)
  string(JSON want GET "${expected}" ${name} num_parameters)
  execute_process(COMMAND "${SFT}" inspect "${ROOT}/tests/fixtures/models/${name}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft inspect ${name} failed (${rc}): ${err}")
  endif()
  # The text report groups digits: 106816 → 106,816.
  string(REGEX REPLACE "([0-9])([0-9][0-9][0-9])$" "\\1,\\2" grouped "${want}")
  string(REGEX REPLACE "([0-9])([0-9][0-9][0-9]),"  "\\1,\\2," grouped "${grouped}")
  if(NOT out MATCHES "parameters    ${grouped} \\(as transformers")
    message(FATAL_ERROR "sft inspect ${name}: expected ${grouped} parameters, got:\n${out}")
  endif()
  execute_process(COMMAND "${SFT}" inspect "${ROOT}/tests/fixtures/models/${name}" --json
                  OUTPUT_VARIABLE json RESULT_VARIABLE rc)
  string(JSON got GET "${json}" num_parameters)
  if(NOT got EQUAL want)
    message(FATAL_ERROR "sft inspect --json ${name}: num_parameters ${got}, transformers says ${want}")
  endif()
  message(STATUS "${name}: ${grouped} parameters, as transformers")
endforeach()
# A broken model folder fails with a non-zero exit and a message naming the problem.
execute_process(COMMAND "${SFT}" inspect "${ROOT}/tests/fixtures/safetensors_bad/dir_missing_shard"
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "config.json")
  message(FATAL_ERROR "sft inspect on a folder without config.json: rc ${rc}, stderr: ${err}")
endif()
# Mixtures of experts stored in their families' own forms (per-expert w1/w2/w3, GraniteMoe's
# input_linear, gpt-oss's transposed and interleaved experts with their biases): the weights
# match the layout, and the count is transformers' num_parameters.
foreach(pair mixtral_experts_sliding:107328 granitemoe_multipliers:91328
             gpt_oss_experts_sinks:108752)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 want)
  execute_process(COMMAND "${SFT}" inspect "${ROOT}/tests/fixtures/parity/${name}" --json
                  OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft inspect ${name} failed (${rc}): ${err}")
  endif()
  string(JSON got GET "${json}" num_parameters)
  string(JSON matches GET "${json}" checkpoint_matches_config)
  if(NOT got EQUAL want OR NOT matches)
    message(FATAL_ERROR "sft inspect --json ${name}: num_parameters ${got} (transformers says "
                        "${want}), checkpoint_matches_config ${matches}\n${json}")
  endif()
  message(STATUS "${name}: ${got} parameters, as transformers")
endforeach()
# gpt-oss with MXFP4 experts (tests/fixtures/mxfp4, tools/make_mxfp4_fixture.py): the U8 pairs
# match the layout, the count is transformers' num_parameters of the dequantized model.
execute_process(COMMAND "${SFT}" inspect "${ROOT}/tests/fixtures/mxfp4/gpt_oss_tiny" --json
                OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft inspect gpt_oss_tiny (MXFP4) failed (${rc}): ${err}")
endif()
string(JSON got GET "${json}" num_parameters)
string(JSON matches GET "${json}" checkpoint_matches_config)
string(JSON mxfp4 GET "${json}" experts_mxfp4)
string(JSON u8 GET "${json}" dtypes_on_disk U8 tensors)
if(NOT got EQUAL 29802 OR NOT matches OR NOT mxfp4 OR NOT u8 EQUAL 8)
  message(FATAL_ERROR "sft inspect --json gpt_oss_tiny (MXFP4): num_parameters ${got} (transformers "
                      "says 29802), checkpoint_matches_config ${matches}, experts_mxfp4 ${mxfp4}, "
                      "U8 tensors ${u8}\n${json}")
endif()
message(STATUS "gpt_oss_tiny (MXFP4): ${got} parameters, as transformers")
