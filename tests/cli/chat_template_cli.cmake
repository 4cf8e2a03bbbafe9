# Runs `sft chat-template` end to end: the text must equal transformers' rendering
# byte for byte, --mask must print JSON spans, and a bad template must fail naming the
# line and column. Usage: cmake -DSFT=path/to/sft -DROOT=repo -DOUT=dir -P chat_template_cli.cmake
set(fx "${ROOT}/tests/fixtures/chat_templates")
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND "${SFT}" chat-template --template "${fx}/chatml.jinja" --messages "${fx}/cli_messages.json"
                        --add_generation_prompt
                OUTPUT_FILE "${OUT}/chatml.txt" ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft chat-template failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}/chatml.txt" "${fx}/cli_expected_chatml.txt"
                RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "sft chat-template output differs from transformers' (${OUT}/chatml.txt)")
endif()
execute_process(COMMAND "${SFT}" chat-template --template "${fx}/chatml_generation.jinja"
                        --messages "${fx}/cli_messages.json" --mask
                OUTPUT_VARIABLE json RESULT_VARIABLE rc)
string(JSON method GET "${json}" method)
string(JSON text GET "${json}" spans 0 text)
if(NOT rc EQUAL 0 OR NOT method STREQUAL "generation" OR NOT text MATCHES "^Très bien")
  message(FATAL_ERROR "sft chat-template --mask: rc ${rc}, output ${json}")
endif()
file(WRITE "${OUT}/bad.jinja" "line one\n{% for x in %}\n")
execute_process(COMMAND "${SFT}" chat-template --template "${OUT}/bad.jinja" --messages "${fx}/cli_messages.json"
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "line 2, column")
  message(FATAL_ERROR "a broken template must fail with its line and column: rc ${rc}, stderr: ${err}")
endif()
message(STATUS "sft chat-template: byte-identical to transformers; masks and errors as expected")
