# With OPENBLAS_CORETYPE unset, `sft` must not run on OpenBLAS's generic SSE3 kernels on a CPU
# with AVX2+FMA (it re-executes itself with a better core type; ops/blas_kernels.h). A user's
# explicit OPENBLAS_CORETYPE is kept.
# Usage: cmake -DSFT=path/to/sft -P blas_kernels.cmake
file(READ /proc/cpuinfo cpuinfo)
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=OPENBLAS_CORETYPE "${SFT}" --version
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sft --version failed (${rc})")
endif()
if(cpuinfo MATCHES " avx2" AND cpuinfo MATCHES " fma" AND out MATCHES "OpenBLAS kernels: Prescott")
  message(FATAL_ERROR "sft runs OpenBLAS's generic kernels on an AVX2 CPU:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env OPENBLAS_CORETYPE=Prescott "${SFT}" --version
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT out MATCHES "OpenBLAS kernels: Prescott")
  message(FATAL_ERROR "an explicit OPENBLAS_CORETYPE was not respected:\n${out}")
endif()
