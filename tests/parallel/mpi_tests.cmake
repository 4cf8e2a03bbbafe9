# Multi-rank tests: the parallel collectives and `sft train` under mpirun, on one host with more
# ranks than cores (--oversubscribe) and as root in containers. Included by
# tests/CMakeLists.txt when SFT_MPI is on.
set(SFT_MPI_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;SFT_NUM_THREADS=1")
# OpenMPI 4.1 leaves ~120 KB of its own allocations (plugins, PMIx) at MPI_Finalize; LSan
# would fail every multi-rank test on them. ASan's other checks stay on.
if(SFT_SANITIZE)
  string(APPEND SFT_MPI_TEST_ENV ";ASAN_OPTIONS=detect_leaks=0")
endif()
foreach(np 2 3)
  add_test(NAME parallel.comm_np${np}
           COMMAND ${SFT_MPIRUN} --oversubscribe -np ${np} $<TARGET_FILE:sft_parallel_tests>
                   --gtest_filter=-CollectiveWatchdog.*)
  set_tests_properties(parallel.comm_np${np} PROPERTIES ENVIRONMENT "${SFT_MPI_TEST_ENV}" TIMEOUT 120
                       PROCESSORS ${np})
endforeach()

add_executable(sft_compare_weights ${CMAKE_CURRENT_SOURCE_DIR}/parallel/compare_weights.cpp)
target_link_libraries(sft_compare_weights PRIVATE sft sft_warnings)
foreach(case parity zero1 zero2 zero2_compose zero3 zero3_resume zero3_reshard moe_resume tp tp_resume packing resume faults)
  add_test(NAME parallel.train_${case}
    COMMAND ${CMAKE_COMMAND} -DSFT=$<TARGET_FILE:sft_cli> -DMPIRUN=${SFT_MPIRUN}
            -DCOMPARE=$<TARGET_FILE:sft_compare_weights> -DROOT=${PROJECT_SOURCE_DIR}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/output/parallel_train_${case} -DCASE=${case}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/parallel/train_mpi.cmake)
  set_tests_properties(parallel.train_${case} PROPERTIES ENVIRONMENT "${SFT_MPI_TEST_ENV}"
                       TIMEOUT 240 PROCESSORS 2)
endforeach()
# The longest of them (label: see the end of tests/CMakeLists.txt).
set_tests_properties(parallel.train_faults parallel.train_tp parallel.train_zero2_compose
                     PROPERTIES LABELS long)

# Across hosts: two network namespaces joined by a veth pair (root only; skipped otherwise).
add_test(NAME parallel.two_hosts_netns
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/parallel/netns_2host.sh $<TARGET_FILE:sft_cli>
          $<TARGET_FILE:sft_parallel_tests> $<TARGET_FILE:sft_compare_weights> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_BINARY_DIR}/output/parallel_two_hosts)
set_tests_properties(parallel.two_hosts_netns PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240
                     PROCESSORS 2 RUN_SERIAL TRUE ENVIRONMENT "${SFT_MPI_TEST_ENV}")

# Expert parallelism (train_ep_mpi.cmake): EP 2 and EP 2 × DP 2 vs plain DP, resume, refusals,
# a rank's memory, EP 2 under TP 2.
foreach(case ep ep_resume ep_memory ep_tp)
  add_test(NAME parallel.train_${case}
    COMMAND ${CMAKE_COMMAND} -DSFT=$<TARGET_FILE:sft_cli> -DMPIRUN=${SFT_MPIRUN}
            -DCOMPARE=$<TARGET_FILE:sft_compare_weights> -DROOT=${PROJECT_SOURCE_DIR}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/output/parallel_train_${case} -DCASE=${case}
            -P ${CMAKE_CURRENT_SOURCE_DIR}/parallel/train_ep_mpi.cmake)
  set_tests_properties(parallel.train_${case} PROPERTIES ENVIRONMENT "${SFT_MPI_TEST_ENV}"
                       TIMEOUT 240 PROCESSORS 2)
endforeach()

# LoRA on the experts' stacks under ZeRO 1-3 (train_lora_experts_mpi.cmake).
add_test(NAME parallel.train_lora_experts
  COMMAND ${CMAKE_COMMAND} -DSFT=$<TARGET_FILE:sft_cli> -DMPIRUN=${SFT_MPIRUN}
          -DROOT=${PROJECT_SOURCE_DIR} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/output/parallel_train_lora_experts
          -P ${CMAKE_CURRENT_SOURCE_DIR}/parallel/train_lora_experts_mpi.cmake)
set_tests_properties(parallel.train_lora_experts PROPERTIES ENVIRONMENT "${SFT_MPI_TEST_ENV}"
                     TIMEOUT 240 PROCESSORS 2)
