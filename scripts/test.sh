#!/usr/bin/env bash
# The test command: installs what is needed, checks the formatting of the C++ files the latest
# change touches (scripts/check_format.sh), builds in Release with tests, runs the whole
# suite through ctest; builds the library and the CLI with g++ too (warnings are errors in
# both); the CUDA build and its emulation; then the suite built with AddressSanitizer + UBSan
# (less the tests labelled `long`, which the Release pass ran).
# Exits non-zero on any failure. Set SFT_SKIP_SANITIZE=1 to run the Release pass only.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}

# ccache (installed by setup.sh) inside this checkout: the CUDA build's libsft files compile
# exactly as the Release build's (same compiler and flags; only src/ops/cuda differs), so they
# are cache hits instead of a second full compile. A cache set up by the caller wins.
if command -v ccache > /dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  export CCACHE_DIR=${CCACHE_DIR:-$PWD/build-ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

status=0
# Each phase prints its start time, and the end a summary, so a CI log shows where time goes.
timings=()
phase() {
  timings+=("$(printf '%5ds  %s' "$SECONDS" "$1")")
  echo "== $1 (at ${SECONDS}s)"
}

phase "Format of the changed C++ files"
scripts/check_format.sh || status=1

phase "Release build"
scripts/build.sh build -DSFT_BUILD_TESTS=ON -DSFT_BUILD_BENCH=ON
phase "Release tests"
ctest --test-dir build --output-on-failure -j "$(nproc)" || status=1

phase "g++ build of the library and the CLI"
# Users build with Debian's g++ as often as with clang: its warnings (-Werror here, as in every
# scripts/build.sh build) must not appear either. Only libsft and the CLI, not the tests, to
# keep CI short; the suite is the clang build's.
CC=gcc CXX=g++ SFT_BUILD_TARGET="sft_cli" scripts/build.sh build-gcc -DSFT_BUILD_TESTS=OFF \
  -DSFT_BUILD_BENCH=OFF || status=1

phase "CUDA: the nvcc build"
# Only the library and the CUDA test binary: the rest of the suite is the Release build's. Its
# GPU tests skip without a device; tests/cuda/emulation runs the kernels' code on the CPU instead
# (no nvcc needed), against the Release build's libsft.
if [ -x /usr/local/cuda/bin/nvcc ]; then
  if SFT_BUILD_TARGET=sft_cuda_tests scripts/build.sh build-cuda -DSFT_CUDA=ON \
      -DSFT_BUILD_TESTS=ON -DSFT_BUILD_BENCH=OFF; then
    build-cuda/tests/sft_cuda_tests || status=1
  else
    status=1
  fi
else
  echo "CUDA build skipped: /usr/local/cuda/bin/nvcc not found (the CUDA toolkit is not installed)"
fi
phase "CUDA: the kernels emulated on the CPU"
# One compile, two runs: the suite in one process, then its Nccl* tests under mpirun -np 2 (the
# emulated NCCL over MPI: collectives, DP 2, ZeRO-1 and TP 2 training vs one process).
tests/cuda/emulation/run.sh build --gtest_brief=1 || status=1

if [ "${SFT_SKIP_SANITIZE:-0}" != "1" ]; then
  phase "ASan + UBSan build"
  # The fuzz test already runs with ASan/UBSan in the Release pass; here it only replays briefly.
  # Line tables only (-gline-tables-only, not -g): reports keep file:line, and the build is shorter.
  # The tests labelled `long` (tests/CMakeLists.txt: many-step parity runs) ran in the Release
  # pass; here they would take a large part of CI's time for code the other tests cover.
  scripts/build.sh build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
    -DSFT_SANITIZE=ON -DSFT_BUILD_TESTS=ON -DSFT_BUILD_BENCH=OFF -DFUZZ_TIME=5
  phase "ASan + UBSan tests"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=suppressions=$PWD/tests/lsan_suppressions.txt \
    ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" -LE long || status=1
fi

phase "end"
printf '%s\n' "== Phases (start time)" "${timings[@]}"
exit $status
