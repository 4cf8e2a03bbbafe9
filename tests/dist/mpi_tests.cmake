# Multi-rank tests: the dist collectives and `sft train` under mpirun, on one host with more
# ranks than cores (--oversubscribe) and as root in containers. Included by
# tests/CMakeLists.txt when SFT_MPI is on.
set(SFT_MPI_TEST_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;SFT_NUM_THREADS=1")
foreach(np 2 3)
  add_test(NAME dist.comm_np${np}
           COMMAND ${SFT_MPIRUN} --oversubscribe -np ${np} $<TARGET_FILE:sft_dist_tests>
                   --gtest_filter=-CollectiveWatchdog.*)
  set_tests_properties(dist.comm_np${np} PROPERTIES ENVIRONMENT "${SFT_MPI_TEST_ENV}" TIMEOUT 120
                       PROCESSORS ${np})
endforeach()
