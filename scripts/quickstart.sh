#!/usr/bin/env bash
# The main job on the embedded default (examples/quickstart/, written by
# tools/make_quickstart_assets.py): installs what is needed, builds sft, trains a tiny Qwen3 drawn
# from its config on 2-digit addition and subtraction questions (`sft train`, TRL flag names in
# examples/quickstart/train.yaml), then answers the held-out questions greedily and fails unless
# at least 90% are exactly right (`sft evaluate`). A few minutes on 2 CPU cores.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
SFT_BUILD_TARGET=sft_cli scripts/build.sh build
build/sft train --config examples/quickstart/train.yaml
build/sft evaluate --model out/quickstart --tokenizer examples/quickstart/model \
  --dataset examples/quickstart/data/test.jsonl --min_exact_match 0.9
