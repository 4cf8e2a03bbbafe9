# Runs `sft tokenize` on the tiny Llama-2-style fixture and checks ids and decodes against
# values HF tokenizers 0.23.3 printed for the same inputs (tools/make_tokenizer_goldens.py
# covers the full corpus; this checks the command's I/O: --text, --input JSONL, --decode).
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch-dir -P tokenize_fixtures.cmake
set(tok "${ROOT}/tests/fixtures/tokenizers/tiny_llama2")
function(expect_output what want)
  execute_process(COMMAND "${SFT}" tokenize ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft tokenize (${what}) failed (${rc}): ${err}")
  endif()
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "sft tokenize (${what}): expected\n${want}got\n${out}")
  endif()
endfunction()

expect_output("--text" "[1, 119, 36, 332, 119, 1, 123, 68, 695, 682, 63, 58, 51]\n"
              --tokenizer "${tok}" --add_special_tokens --text "Hello <s> wörld")
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/in.jsonl" "\"Hello <s> wörld\"\n\"x\\ny\"\n")
expect_output("--input" "[119, 36, 332, 119, 1, 123, 68, 695, 682, 63, 58, 51]\n[119, 69, 4, 70]\n"
              --tokenizer "${tok}/tokenizer.json" --input "${WORK}/in.jsonl")
file(WRITE "${WORK}/ids.jsonl" "[1, 119, 36, 332, 119, 1, 123, 68, 695, 682, 63, 58, 51]\n")
expect_output("--decode" "\"<s> Hello <s>  wörld\"\n"
              --tokenizer "${tok}" --decode --input "${WORK}/ids.jsonl")
expect_output("--decode --skip_special_tokens" "\"Hello   wörld\"\n"
              --tokenizer "${tok}" --decode --skip_special_tokens --input "${WORK}/ids.jsonl")

# Bad input: a clear message and a non-zero exit.
file(WRITE "${WORK}/bad.jsonl" "\"ok\"\n[1, 2]\n")
execute_process(COMMAND "${SFT}" tokenize --tokenizer "${tok}" --input "${WORK}/bad.jsonl"
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "line 2: expected a JSON string")
  message(FATAL_ERROR "sft tokenize on a non-string line: rc ${rc}, stderr: ${err}")
endif()
execute_process(COMMAND "${SFT}" tokenize --tokenizer "${ROOT}/tests" --text x
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "no tokenizer.json")
  message(FATAL_ERROR "sft tokenize without tokenizer.json: rc ${rc}, stderr: ${err}")
endif()
