# `sft` keeps its process name when it re-executes itself to pick better OpenBLAS kernels
# (cli/main.cpp): /proc/PID/comm says `sft`, not `exe`, so `pgrep sft` finds a run.
# A `sft tokenize --input FIFO` waiting for a writer is the long-running process; the re-exec has
# happened once its /proc/PID/environ holds OPENBLAS_CORETYPE (set only for the new image).
# SFT_TEST_REEXEC=1 makes sft re-execute on a CPU where OpenBLAS picks good kernels itself.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch -P process_name.cmake
set(tok "${ROOT}/tests/fixtures/tokenizers/tiny_llama2")
set(script [=[
fifo="$3/input.fifo"
rm -f "$fifo"
mkfifo "$fifo"
env -u OPENBLAS_CORETYPE SFT_TEST_REEXEC=1 "$1" tokenize --tokenizer "$2" --input "$fifo" > /dev/null &
pid=$!
seen=""
for i in $(seq 1 100); do
  if tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -q '^OPENBLAS_CORETYPE='; then
    seen=reexec
    break
  fi
  sleep 0.1
done
comm=$(cat /proc/$pid/comm)
kill $pid
rm -f "$fifo"
echo "comm=$comm $seen"
]=])
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND sh -c "${script}" sh "${SFT}" "${tok}" "${WORK}" OUTPUT_VARIABLE out
                ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "${out}")
if(NOT out MATCHES "comm=sft reexec")
  get_filename_component(name "${SFT}" NAME)
  message(FATAL_ERROR "the re-executed process of ${name} is not named sft (or it did not "
                      "re-execute): ${out}${err}")
endif()
