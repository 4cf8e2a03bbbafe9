#!/usr/bin/env bash
# Runs tests/cuda on the CPU with the CUDA kernels' own code emulated (cuda_runtime.h here): the
# check of the kernels' arithmetic that a machine without a GPU can make. The .cu sources are
# rewritten by emulate.pl (launch syntax only) and compiled as C++ together with the backend's
# host files and the tests, against the CPU build's libsft; cuBLASLt is cublasLt.h here (its
# documented semantics in double), so matmul.cpp's layout mapping is checked too. The GEMM
# timing is left out; tests/conformance runs with it (its "cuda" backend present). Usage:
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
flags=(-std=c++20 -O1 -g -ffp-contract=off -pthread -DSFT_WITH_CUDA=1 -I tests/cuda/emulation
  -I "$work/src" -I src -I tests)
sources=("$work"/src/ops/cuda/*.cu src/ops/cuda/backend.cpp src/ops/cuda/cuda_check.cpp
  src/ops/cuda/cuda_memory.cpp src/ops/cuda/cuda_views.cpp src/ops/cuda/matmul.cpp
  src/ops/cuda/lm_head.cpp)
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
(cd "$build" && clang++ -pthread "$work"/obj/*.o $libraries -o "$work/sft_cuda_tests_emulated")
"$work/sft_cuda_tests_emulated" --gtest_filter='-CudaGemmTiming*' "$@"
