#!/usr/bin/env bash
# Installs the system packages sft needs to build and test (Debian 12). Idempotent: does
# nothing when everything is already installed. Downloads nothing but Debian packages.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  ccache                            # scripts/test.sh: the CUDA build reuses the Release build's objects
  clang libclang-rt-14-dev          # clang builds the libFuzzer target and is our default compiler
  libomp-dev                        # OpenMP for clang: the thread pool and oneDNN share its team
  clang-format                      # scripts/check_format.sh (clang-format 14 on Debian 12)
  nlohmann-json3-dev
  libpcre2-dev libutf8proc-dev      # tokenizer: regexes, Unicode normalization
  libopenblas-dev                   # CPU matmul (f32 reference, double)
  libdnnl-dev                       # oneDNN: bf16 (AMX, AVX512-BF16) and f32 matmul
  libyaml-cpp-dev                   # sft train --config FILE.yaml
  libsnappy-dev zlib1g-dev libzstd-dev  # Parquet page codecs
  libcurl4-openssl-dev libssl-dev   # Hub downloads (HTTP, SHA-256 of LFS files)
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin        # distributed training: mpirun -np N sft train ...
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
