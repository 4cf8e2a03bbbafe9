#!/usr/bin/env bash
# The main job on the embedded default: installs what is needed, builds sft, and runs it on
# the tiny example model in examples/quickstart/. (Until `sft train` lands, the job is
# `sft inspect`: architecture, parameter counts and the memory a full fine-tune needs.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
SFT_BUILD_TARGET=sft_cli scripts/build.sh build
build/sft inspect examples/quickstart/model
