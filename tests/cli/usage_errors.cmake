# A command's flags go through OptionSet (io/options.h): a misspelt flag fails with exit code
# 2 (a usage error, docs/cli.md) naming the closest valid flag, and --help lists the flags
# under their group headings.
# Usage: cmake -DSFT=path/to/sft -DCOMMAND=generate (or debug,forward) -DTYPO=max_new_token
#              -DSUGGEST=max_new_tokens -DGROUPS=input,generation,output -P usage_errors.cmake
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" COMMAND "${COMMAND}")
string(REPLACE "," ";" GROUPS "${GROUPS}")
execute_process(COMMAND "${SFT}" ${COMMAND} --${TYPO} 3 OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "sft ${COMMAND} --${TYPO}: exit ${rc}, wanted 2 (a usage error)\n${out}${err}")
endif()
string(FIND "${err}" "unknown option --${TYPO} (did you mean --${SUGGEST}?" at)
if(at EQUAL -1)
  message(FATAL_ERROR "sft ${COMMAND} --${TYPO}: stderr does not suggest --${SUGGEST}:\n${err}")
endif()

execute_process(COMMAND "${SFT}" ${COMMAND} --help OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft ${COMMAND} --help: exit ${rc}\n${err}")
endif()
set(last -1)
foreach(group ${GROUPS})
  string(FIND "${out}" "\n${group}:\n  --" at)
  if(at LESS_EQUAL last)
    message(FATAL_ERROR "sft ${COMMAND} --help: no group '${group}:' (after the previous one):\n${out}")
  endif()
  set(last ${at})
endforeach()
string(FIND "${out}" "  --${SUGGEST} " at)
if(at EQUAL -1)
  message(FATAL_ERROR "sft ${COMMAND} --help does not list --${SUGGEST}:\n${out}")
endif()
message(STATUS "sft ${COMMAND}: --${TYPO} suggests --${SUGGEST} (exit 2); --help lists ${GROUPS}")
