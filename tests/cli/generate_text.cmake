# `sft generate` with text in and out on a tiny Qwen3 that has a real tokenizer and chat
# template: prompt ids, greedy ids and decoded text must equal transformers'
# (tests/fixtures/generate_text/expected.json, from tools/make_generate_text_fixture.py).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -P generate_text.cmake
cmake_minimum_required(VERSION 3.25)
set(F "${ROOT}/tests/fixtures/generate_text")
file(READ "${F}/expected.json" expected)
string(JSON max_new GET "${expected}" max_new_tokens)
string(JSON prompt_text GET "${expected}" prompt prompt)
foreach(case prompt messages)
  if(case STREQUAL "prompt")
    set(input --prompt "${prompt_text}")
  else()
    set(input --messages "${F}/messages.json")
  endif()
  string(JSON want_text GET "${expected}" ${case} text)
  string(JSON want_ids GET "${expected}" ${case} new_ids)
  string(REGEX REPLACE "[ \n]" "" want_ids "${want_ids}")
  execute_process(COMMAND "${SFT}" generate --model "${F}" ${input} --max_new_tokens ${max_new}
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft generate (${case}) failed (${rc}): ${err}")
  endif()
  if(NOT text STREQUAL "${want_text}\n")
    message(FATAL_ERROR "sft generate (${case}): text differs from transformers\n got: ${text}\nwant: ${want_text}")
  endif()
  execute_process(COMMAND "${SFT}" generate --model "${F}" ${input} --max_new_tokens ${max_new} --output_ids
                  OUTPUT_VARIABLE ids RESULT_VARIABLE rc)
  string(STRIP "${ids}" ids)
  if(NOT ids STREQUAL "${want_ids}")
    message(FATAL_ERROR "sft generate (${case}): ids ${ids}, transformers ${want_ids}")
  endif()
  message(STATUS "${case}: ${ids}")
endforeach()
