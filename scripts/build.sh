#!/usr/bin/env bash
# Configures and builds sft. Usage: scripts/build.sh BUILD_DIR [extra cmake args...]
# SFT_BUILD_TARGET="name [name ...]" builds those targets instead of everything.
# Uses clang (so the libFuzzer target is real) unless CC/CXX are set. Warnings are errors here
# (-DSFT_WERROR=ON; a later -DSFT_WERROR=OFF among the arguments wins): a plain `cmake` build
# leaves them warnings, so another compiler's new (or false) warning does not stop a user.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:?usage: scripts/build.sh BUILD_DIR [cmake args...]}
shift
export CC=${CC:-clang}
export CXX=${CXX:-clang++}
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSFT_WERROR=ON "$@" > "$build_dir/configure.log" 2>&1 || {
  cat "$build_dir/configure.log"
  exit 1
}
cmake --build "$build_dir" -j "$(nproc)" ${SFT_BUILD_TARGET:+--target $SFT_BUILD_TARGET}
