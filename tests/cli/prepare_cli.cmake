# `sft prepare` end to end on a tiny conversational dataset (tests/fixtures/prepare/cli, made by
# tools/make_prepare_goldens.py): the --dump rows (assistant_only_loss, max_length 40) and the
# --dump_packed rows (bfd, max_length 64) equal what TRL 1.16's _prepare_dataset produced;
# a second run opens the token cache and says so; a corrupt cache is an error naming the file.
# Usage: cmake -DSFT=path/to/sft -DROOT=repo -DWORK=scratch-dir -P prepare_cli.cmake
set(fx "${ROOT}/tests/fixtures/prepare/cli")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(common prepare --model_name_or_path "${fx}/tokenizer" --dataset_name "${fx}/chat.jsonl"
    --assistant_only_loss true --cache_dir "${WORK}/cache")

function(run_ok what)
  execute_process(COMMAND "${SFT}" ${common} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sft prepare (${what}) failed (${rc}): ${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

function(expect_match what text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "sft prepare (${what}): expected to match '${regex}', got:\n${text}")
  endif()
endfunction()

function(expect_same_file what got want)
  file(READ "${got}" a)
  file(READ "${want}" b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "sft prepare (${what}): ${got} differs from TRL's ${want}:\n${a}")
  endif()
endfunction()

# Cold cache: rows as TRL makes them, report and preview on stdout.
run_ok("first run" --max_length 40 --dump "${WORK}/dump.jsonl" --report --preview 2)
expect_same_file("--dump" "${WORK}/dump.jsonl" "${fx}/expected_dump.jsonl")
expect_match("report" "${out}" "12 read, 4 kept, 8 dropped \\(8 no_trained_tokens\\)")
expect_match("report" "${out}" "from cache: +no")
expect_match("preview" "${out}" "--- row 0: 40 tokens, [0-9]+ trained, 1 document\\(s\\) ---\n<\\|im_start\\|>")
expect_match("preview" "${out}" "assistant\n\\[\\[[^]]+<\\|im_end\\|>")

# Warm cache: opened, not prepared again.
run_ok("second run" --max_length 40 --report)
expect_match("cache" "${err}" "using the token cache")
expect_match("cache" "${out}" "from cache: +yes")
expect_match("cache" "${out}" "12 read, 4 kept")

# Packing: the packed rows TRL's pack_dataset + padding-free collator give.
run_ok("packing" --max_length 64 --packing true --dump_packed "${WORK}/packed.jsonl" --report)
expect_same_file("--dump_packed" "${WORK}/packed.jsonl" "${fx}/expected_packed.jsonl")
# The audit counts what packing cut, as TRL's rows lack it (expected_packed_audit.json).
file(READ "${fx}/expected_packed_audit.json" audit)
string(JSON rows_cut GET "${audit}" rows_truncated)
string(JSON tokens_cut GET "${audit}" tokens_truncated)
string(JSON tokens GET "${audit}" tokens)
string(JSON packed_tokens GET "${audit}" packed_tokens)
expect_match("packing audit" "${out}" "truncated rows: +${rows_cut} \\([0-9.]+% of rows read\\), ${tokens_cut} tokens cut")
expect_match("packing audit" "${out}" "tokens: +${tokens} encoded, ${packed_tokens} in training rows")

# A damaged cache is refused with the file named, never read as rows.
file(GLOB shards "${WORK}/cache/*/shard-00000.bin")
foreach(shard ${shards})
  file(WRITE "${shard}" "not a shard")
endforeach()
execute_process(COMMAND "${SFT}" ${common} --max_length 40 ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "shard-00000.bin: truncated: 11 bytes, shorter than the header")
  message(FATAL_ERROR "sft prepare on a damaged cache: rc ${rc}, stderr: ${err}")
endif()
