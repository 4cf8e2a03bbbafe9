#!/usr/bin/env bash
# Runs tests/cuda on the CPU with the CUDA kernels' own code emulated (cuda_runtime.h here): the
# check of the kernels' arithmetic that a machine without a GPU can make. The .cu sources are
# rewritten by emulate.pl (launch syntax only) and compiled as C++ together with the backend's
# host files and the tests, against the CPU build's libsft; cuBLASLt is cublasLt.h here (its
# documented semantics in double), so matmul.cpp's layout mapping is checked too. The GEMM
# timing is left out; tests/conformance runs with it (its "cuda" backend present). NCCL is
# nccl.h here, served over MPI (nccl_emulation.cpp), so src/parallel/nccl_comm.cpp is compiled
# and linked too: the Nccl* tests then run under mpirun -np 2 (SFT_EMULATION_NP, 0 skips them;
# SFT_EMULATION_MPI_FILTER narrows them), after the one-process run of everything else. Usage:
#   tests/cuda/emulation/run.sh [CPU_BUILD_DIR=build] [gtest args...]
# (CPU_BUILD_DIR: a configured CPU build, e.g. scripts/build.sh build -DSFT_BUILD_TESTS=ON; the
# script builds its sft_ops_tests target first for libsft and the link line.)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build}
shift || true
ninja -C "$build" sft_ops_tests > /dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/ops/cuda" "$work/obj"
for f in src/ops/cuda/*.cu src/ops/cuda/*.cuh; do
  tests/cuda/emulation/emulate.pl "$f" "$work/src/ops/cuda/$(basename "$f")"
done
# MPI's headers for the emulated NCCL (mpicxx knows where OpenMPI keeps them).
read -r -a mpi_flags <<< "$(mpicxx --showme:compile)"
flags=(-std=c++20 -O1 -g -ffp-contract=off -pthread -DSFT_WITH_CUDA=1 -DSFT_NCCL_EMULATED=1
  -I tests/cuda/emulation -I "$work/src" -I src -I tests "${mpi_flags[@]}")
sources=("$work"/src/ops/cuda/*.cu)
for f in src/ops/cuda/*.cpp; do  # the backend's host files, as the CUDA build compiles them
  case "$f" in *without_cuda.cpp) ;; *) sources+=("$f") ;; esac
done
# The device communicator over the emulated NCCL (the CPU build's libsft has without_nccl.cpp).
sources+=(src/parallel/nccl_comm.cpp tests/cuda/emulation/nccl_emulation.cpp)
for t in tests/cuda/*_test.cpp; do
  case "$t" in *gemm_timing_test.cpp) ;; *) sources+=("$t") ;; esac
done
# The conformance suite too: its "cuda" backend is present here, so every op it has a CUDA
# kernel for runs through the view-level ops:: routing on emulated device memory.
sources+=(tests/conformance/*_test.cpp)
# Object names keep the folder (tests/cuda and tests/conformance both have matmul_test.cpp).
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -I{} sh -c \
  'clang++ "$@" -x c++ -c "{}" -o "'"$work"'/obj/$(echo "{}" | tr / _).o"' _ "${flags[@]}"
# The CPU build's link line of a test binary: libsft, GoogleTest and the system libraries.
libraries=$(awk '/^build tests\/sft_ops_tests /{f=1} f && /LINK_LIBRARIES/ {sub(/^ *LINK_LIBRARIES = /, ""); print; exit}' \
  "$build/build.ninja")
read -r -a mpi_link <<< "$(mpicxx --showme:link)"
(cd "$build" && clang++ -pthread "$work"/obj/*.o $libraries "${mpi_link[@]}" \
  -o "$work/sft_cuda_tests_emulated")
"$work/sft_cuda_tests_emulated" --gtest_filter='-CudaGemmTiming*:Nccl*' "$@"
# Two ranks, each with its emulated device, talking through the emulated NCCL. (The tests'
# own filter comes last, so it wins over one in the arguments.)
np=${SFT_EMULATION_NP:-2}
if [ "$np" -gt 1 ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SFT_NUM_THREADS=1 \
    mpirun --oversubscribe -np "$np" "$work/sft_cuda_tests_emulated" "$@" \
    --gtest_filter="${SFT_EMULATION_MPI_FILTER:-Nccl*}"
fi
