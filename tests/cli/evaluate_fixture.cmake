# `sft evaluate` on a tiny model trained on the quickstart task
# (tests/fixtures/evaluate/, from tools/make_evaluate_fixture.py): the exact-match line must
# count what transformers' greedy answers count, the first mismatch must be printed with the
# answer transformers gives, and --min_exact_match above the score must fail.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -P evaluate_fixture.cmake
cmake_minimum_required(VERSION 3.25)
set(F "${ROOT}/tests/fixtures/evaluate")
file(READ "${F}/expected.json" expected)
string(JSON rows GET "${expected}" rows)
string(JSON correct GET "${expected}" correct)
string(JSON max_new GET "${expected}" max_new_tokens)
math(EXPR permille "(${correct} * 1000 + ${rows} / 2) / ${rows}")
set(score "0.${permille}")
if(permille LESS 100)
  set(score "0.0${permille}")
endif()
if(permille LESS 10)
  set(score "0.00${permille}")
endif()
if(permille EQUAL 1000)
  set(score "1.000")
endif()

execute_process(COMMAND "${SFT}" evaluate --model "${F}" --dataset "${F}/test.jsonl"
                        --max_new_tokens ${max_new} --show_failures 1
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft evaluate failed (${rc}): ${err}")
endif()
message(STATUS "${out}")
if(NOT out MATCHES "exact_match: ${score} \\(${correct}/${rows}\\)\n$")
  message(FATAL_ERROR "want 'exact_match: ${score} (${correct}/${rows})' (transformers), got:\n${out}")
endif()

# The first mismatch, as transformers answered it.
string(JSON n LENGTH "${expected}" answers)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON want GET "${expected}" answers ${i} want)
  string(JSON got GET "${expected}" answers ${i} got)
  if(NOT want STREQUAL got)
    string(JSON question GET "${expected}" answers ${i} question)
    math(EXPR line "${i} + 1")
    set(block "mismatch line ${line}: ${question}\n  want: ${want}\n   got: ${got}\n")
    string(FIND "${out}" "${block}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "first mismatch not reported as transformers has it:\n${block}got:\n${out}")
    endif()
    break()
  endif()
endforeach()

# --limit evaluates a prefix; a threshold above the score fails with a message.
execute_process(COMMAND "${SFT}" evaluate --model "${F}" --dataset "${F}/test.jsonl" --limit 3
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "exact_match: [0-9.]+ \\([0-3]/3\\)\n$")
  message(FATAL_ERROR "--limit 3: rc ${rc}, output:\n${out}")
endif()
execute_process(COMMAND "${SFT}" evaluate --model "${F}" --dataset "${F}/test.jsonl"
                        --min_exact_match 1 --show_failures 0
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "below --min_exact_match 1")
  message(FATAL_ERROR "--min_exact_match 1 should fail: rc ${rc}, stderr: ${err}")
endif()

# Hub ids, from the HF cache as `sft train` resolves them: the model (and --tokenizer) as
# models--ORG--NAME, the dataset as datasets--ORG--NAME whose test split is evaluated.
set(HUB "${CMAKE_CURRENT_BINARY_DIR}/output/evaluate_hub")
file(REMOVE_RECURSE "${HUB}")
set(snapshot "0123456789abcdef0123456789abcdef01234567")
foreach(repo "models--sft-test--tiny" "datasets--sft-test--held-out")
  file(MAKE_DIRECTORY "${HUB}/${repo}/snapshots/${snapshot}" "${HUB}/${repo}/refs")
  file(WRITE "${HUB}/${repo}/refs/main" "${snapshot}")
endforeach()
file(GLOB model_files "${F}/*")
list(FILTER model_files EXCLUDE REGEX "(test\\.jsonl|expected\\.json)$")
file(COPY ${model_files} DESTINATION "${HUB}/models--sft-test--tiny/snapshots/${snapshot}")
file(MAKE_DIRECTORY "${HUB}/datasets--sft-test--held-out/snapshots/${snapshot}/data")
file(COPY "${F}/test.jsonl" DESTINATION "${HUB}/datasets--sft-test--held-out/snapshots/${snapshot}/data")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "HF_HUB_CACHE=${HUB}"
                        "${SFT}" evaluate --model sft-test/tiny --tokenizer sft-test/tiny
                        --dataset sft-test/held-out --max_new_tokens ${max_new} --show_failures 0
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "exact_match: ${score} \\(${correct}/${rows}\\)\n$")
  message(FATAL_ERROR "Hub ids: rc ${rc}, want 'exact_match: ${score} (${correct}/${rows})', got:\n${out}\n${err}")
endif()
# A split the dataset does not have is named in the error.
execute_process(COMMAND ${CMAKE_COMMAND} -E env "HF_HUB_CACHE=${HUB}"
                        "${SFT}" evaluate --model sft-test/tiny --dataset sft-test/held-out
                        --split validation
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "validation")
  message(FATAL_ERROR "--split validation should fail naming the split: rc ${rc}, stderr: ${err}")
endif()
