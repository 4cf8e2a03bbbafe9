#!/usr/bin/env bash
# The whole CUDA check in one run on a GPU machine (issue 14, docs/cuda.md), from the repo root:
#
#   scripts/device_check.sh            on the GPU machine (one H200, 16 cores): < 8 minutes
#   scripts/device_check.sh --bundle   on the build machine, beforehand (see below)
#
# On the GPU machine it prints nvidia-smi, gets the CUDA test binary, runs every tests/cuda test
# (nothing may skip there: a skip means no device was seen, and fails the check), runs them again
# under compute-sanitizer (memcheck; racecheck on the kernels with shared memory) when it is
# installed, runs `sft train` on the GPU (the TRL parity fixtures against TRL's logged values, a
# --bf16 run against the CPU's, one short run under compute-sanitizer memcheck), and times the cuBLASLt bf16 GEMMs at the
# Qwen3-0.6B shapes (TFLOP/s vs 989). The log
# goes to $OUT/device_check.log when $OUT is set (else build-cuda-check/). Exit status 0 only when
# every step passed; the summary at the end lists each step.
#
# The binary: built there (build-cuda, scripts/build.sh) when the machine has the build's system
# libraries; otherwise taken from build-cuda-bundle/, which `--bundle` makes here: the test binary
# and the shared libraries it needs (all but libc, libstdc++, the CUDA driver, cuBLASLt and NCCL
# (208 MiB), which the GPU machine's CUDA provides), stamped with a hash of the sources so a stale one is refused.
# build-cuda-bundle/ is ignored by git (/build*/): name it in the device tool's `carry`.
# SFT_DEVICE_CHECK_USE_BUNDLE=1 takes the bundle even where the build could run (saves ~2 min).
set -uo pipefail
cd "$(dirname "$0")/.."

bundle_dir=build-cuda-bundle
bundle=$bundle_dir/sft_cuda_tests.tar.gz

source_stamp() {
  find src tests/cuda tests/conformance CMakeLists.txt tests/CMakeLists.txt -type f -print0 | sort -z |
    xargs -0 sha1sum | sha1sum | cut -d' ' -f1
}

# ---- --bundle: on the build machine ---------------------------------------------------------
if [ "${1:-}" = "--bundle" ]; then
  set -e
  SFT_BUILD_TARGET="sft_cuda_tests sft_conformance_tests sft" scripts/build.sh build-cuda \
    -DSFT_CUDA=ON -DSFT_BUILD_TESTS=ON -DSFT_BUILD_BENCH=OFF
  staging=$(mktemp -d)
  mkdir -p "$staging/lib"
  cp build-cuda/tests/sft_cuda_tests build-cuda/tests/sft_conformance_tests build-cuda/sft "$staging/"
  # Everything ldd resolves except what every Linux (and the GPU machine's CUDA) has.
  ldd build-cuda/tests/sft_cuda_tests build-cuda/sft | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|libnsl|libutil|libanl|libstdc\+\+|libgcc_s|libcuda|libcublasLt|libcublas|libnccl|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$staging/lib/"; done
  source_stamp > "$staging/STAMP"
  mkdir -p "$bundle_dir"
  tar -C "$staging" -czf "$bundle" .
  rm -rf "$staging"
  echo "wrote $bundle ($(du -h "$bundle" | cut -f1)); carry $bundle_dir to the GPU machine"
  exit 0
fi

# ---- the check, on the GPU machine ---------------------------------------------------------
log_dir=${OUT:-build-cuda-check}
mkdir -p "$log_dir"

check() {
  started=$(date +%s)
  summary=()
  status=0
  elapsed() { echo $(($(date +%s) - started)); }
  step() {  # step NAME RC
    if [ "$2" = 0 ]; then summary+=("PASS  $1 (at $(elapsed) s)"); else
      summary+=("FAIL  $1 (rc $2, at $(elapsed) s)")
      status=1
    fi
  }
  finish() {
    echo
    echo "== summary ($(elapsed) s in all)"
    printf '%s\n' "${summary[@]}"
    [ "$status" = 0 ] && echo "device check: PASS" || echo "device check: FAIL"
    exit "$status"
  }

  echo "== machine ($(date -u +%FT%TZ))"
  uname -a
  nproc
  if nvidia-smi; then step "nvidia-smi" 0; else
    step "nvidia-smi (no driver or no GPU here)" 1
    finish
  fi

  # Where the build would need a system library this machine lacks, the bundle is used instead.
  missing=()
  for tool in cmake ninja pkg-config; do command -v "$tool" > /dev/null || missing+=("$tool"); done
  [ -x /usr/local/cuda/bin/nvcc ] || missing+=("/usr/local/cuda/bin/nvcc")
  command -v clang++ > /dev/null || command -v g++ > /dev/null || missing+=("a C++ compiler")
  if command -v pkg-config > /dev/null; then
    for module in libpcre2-8 libutf8proc openblas yaml-cpp snappy zlib libzstd; do
      pkg-config --exists "$module" || missing+=("$module")
    done
  fi
  [ -f /usr/include/oneapi/dnnl/dnnl.hpp ] || missing+=("oneDNN (libdnnl-dev)")
  [ -d /usr/include/gtest ] || missing+=("GoogleTest")
  [ -d /usr/include/nlohmann ] || missing+=("nlohmann-json")

  binary=""
  sft=""
  if [ "${SFT_DEVICE_CHECK_USE_BUNDLE:-0}" = 1 ]; then
    echo "== no build: SFT_DEVICE_CHECK_USE_BUNDLE=1"
  elif [ ${#missing[@]} = 0 ]; then
    echo "== build (build-cuda, $(nproc) cores)"
    command -v clang++ > /dev/null || export CC=gcc CXX=g++
    SFT_BUILD_TARGET="sft_cuda_tests sft_conformance_tests sft" timeout 360 scripts/build.sh \
      build-cuda -DSFT_CUDA=ON -DSFT_BUILD_TESTS=ON -DSFT_BUILD_BENCH=OFF
    rc=$?
    step "build (scripts/build.sh build-cuda)" $rc
    [ $rc = 0 ] && binary=build-cuda/tests/sft_cuda_tests && sft=build-cuda/sft
  else
    echo "== no build here: missing ${missing[*]}"
  fi
  if [ -z "$binary" ] && [ -f "$bundle" ]; then
    echo "== prebuilt bundle ($bundle)"
    unpacked=$(mktemp -d)
    tar -C "$unpacked" -xzf "$bundle"
    if [ "$(cat "$unpacked/STAMP")" != "$(source_stamp)" ] && [ "${SFT_DEVICE_CHECK_STALE_OK:-0}" != 1 ]; then
      echo "the bundle was made from other sources (run scripts/device_check.sh --bundle again;"
      echo "SFT_DEVICE_CHECK_STALE_OK=1 runs it anyway)"
      step "bundle matches the sources" 1
      finish
    fi
    step "bundle matches the sources" 0
    binary=$unpacked/sft_cuda_tests
    sft=$unpacked/sft
    export LD_LIBRARY_PATH="$unpacked/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -z "$binary" ]; then
    echo "no test binary: the build failed or could not run here, and there is no $bundle"
    echo "(make one with scripts/device_check.sh --bundle and carry $bundle_dir)"
    step "test binary" 1
    finish
  fi

  # cuBLASLt, NCCL (and cudart) from this machine's CUDA when the loader does not find them.
  if ldd "$binary" | grep -q 'not found'; then
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
      $(timeout 60 find / -xdev \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) \
        -printf '%h\n' 2> /dev/null | sort -u); do
      [ -d "$dir" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
    done
  fi
  echo "== libraries"
  ldd "$binary" | grep -E 'cuda|cublas|nccl|not found'
  if ldd "$binary" | grep -q 'not found'; then
    step "every shared library found" 1
    finish
  fi
  step "every shared library found" 0

  echo "== tests/cuda (nothing may skip; the Nccl* ones need two ranks: below)"
  timeout 300 "$binary" --gtest_color=no --gtest_filter='-Nccl*' 2>&1 | tee "$log_dir/tests.log"
  rc=${PIPESTATUS[0]}
  step "tests/cuda" $rc
  skipped=$(grep -c '^\[  SKIPPED \] ' "$log_dir/tests.log")
  if [ "$skipped" != 0 ]; then step "no test skipped ($skipped lines of skips)" 1; else step "no test skipped" 0; fi

  # NCCL over two ranks, one GPU each (the local rank picks it): NCCL refuses two ranks on one
  # device, so a one-GPU machine (the lent H200) cannot run it and says so.
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
  if [ "$gpus" -ge 2 ] && command -v mpirun > /dev/null; then
    echo "== tests/cuda Nccl* under mpirun -np 2 ($gpus GPUs)"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 240 mpirun --oversubscribe \
      -np 2 -x LD_LIBRARY_PATH "$binary" --gtest_color=no --gtest_filter='Nccl*' 2>&1 |
      tee "$log_dir/nccl.log"
    step "tests/cuda Nccl* (DP 2, ZeRO-1, TP 2 over NCCL)" "${PIPESTATUS[0]}"
  else
    echo "== NCCL over 2 ranks skipped: $gpus GPU(s) here (NCCL needs one per rank), or no mpirun"
  fi

  # The conformance suite's /cuda cases: every routed op through ops:: on CUDA views vs the
  # fp64 reference (column blocks included); nothing may skip.
  echo "== tests/conformance on CUDA"
  conformance=$(dirname "$binary")/sft_conformance_tests
  timeout 300 "$conformance" --gtest_color=no --gtest_filter='*/cuda' 2>&1 |
    tee "$log_dir/conformance.log"
  step "tests/conformance on CUDA" "${PIPESTATUS[0]}"
  unexpected=$(grep '^\[  SKIPPED \] ' "$log_dir/conformance.log" |
    grep -Evc 'tests?, listed below' || true)
  if [ "$unexpected" != 0 ]; then
    step "conformance: nothing skipped ($unexpected skipped)" 1
  else
    step "conformance: nothing skipped" 0
  fi

  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null)
  if [ -n "$sanitizer" ] && [ "$(elapsed)" -lt 330 ]; then
    echo "== compute-sanitizer memcheck"
    timeout 150 "$sanitizer" --tool memcheck --error-exitcode 1 "$binary" --gtest_color=no \
      --gtest_brief=1
    step "compute-sanitizer memcheck" $?
    echo "== compute-sanitizer racecheck (the kernels with shared memory)"
    timeout 90 "$sanitizer" --tool racecheck --error-exitcode 1 "$binary" --gtest_color=no \
      --gtest_brief=1 --gtest_filter='CudaRmsnorm.*:CudaEmbedding.*:CudaOptimizer.Sum*:CudaElementwise.Bias*'
    step "compute-sanitizer racecheck" $?
  else
    echo "== compute-sanitizer: ${sanitizer:-not installed}; skipped at $(elapsed) s"
  fi

  # `sft train` on the GPU: the device line, then the TRL parity fixtures' logged values within
  # tests/cli/train_trl_parity.cmake's bounds (1e-4 relative), then one short run under memcheck.
  echo "== sft train on the GPU (tests/fixtures/trl_parity/bfd_gas1, 20 steps)"
  train_flags=(--model_name_or_path tests/fixtures/trl_parity/model --dataset_name
    tests/fixtures/trl_parity/data.jsonl --per_device_train_batch_size 2 --max_length 128
    --learning_rate 1e-3 --seed 42 --bf16 false --train_sampling_strategy sequential
    --report_to none --packing --packing_strategy bfd --logging_steps 1 --disable_tqdm true)
  timeout 120 "$sft" train "${train_flags[@]}" --max_steps 20 --output_dir "$log_dir/train" \
    2>&1 | tee "$log_dir/train.log"
  step "sft train on the GPU" "${PIPESTATUS[0]}"
  if grep -q '\[device\] cuda:' "$log_dir/train.log"; then step "sft train chose the GPU" 0; else
    step "sft train chose the GPU" 1
  fi
  if command -v cmake > /dev/null && [ "$(elapsed)" -lt 400 ]; then
    timeout 150 cmake -DSFT="$(realpath "$sft")" -DROOT="$PWD" -DWORK="$PWD/$log_dir/trl_parity" \
      -DCONFIGS="bfd_gas1;bfd_gas4;nopack_gas4;smollm3_bfd_gas4" \
      -P tests/cli/train_trl_parity.cmake 2>&1 | tee "$log_dir/trl_parity.log"
    step "sft train on the GPU vs TRL (4 fixtures)" "${PIPESTATUS[0]}"
  fi
  # --bf16 on the GPU (the stacked q/k/v product's column blocks, the bf16 attention and LM
  # head) against the same 6 steps on this machine's CPU (--use_cpu): no TRL golden is in bf16,
  # so each logged loss, grad_norm and entropy within BF16_BOUND relative of the CPU's bf16 run:
  # 5e-3, 5x tests/cuda/trainer_test.cpp's bound for these flags (emulated: 3.2e-4; cuBLASLt
  # sums in its own orders), 10x below the bf16 run's distance from fp32 (4.9e-2).
  echo "== sft train --bf16 on the GPU vs the CPU (bfd_gas1, 6 steps)"
  bf16_flags=("${train_flags[@]/#false/true}")
  timeout 120 "$sft" train "${bf16_flags[@]}" --max_steps 6 --output_dir "$log_dir/train_bf16" \
    2>&1 | tee "$log_dir/train_bf16.log"
  rc=${PIPESTATUS[0]}
  timeout 120 "$sft" train "${bf16_flags[@]}" --use_cpu --max_steps 6 \
    --output_dir "$log_dir/train_bf16_cpu" > "$log_dir/train_bf16_cpu.log" 2>&1 || rc=1
  step "sft train --bf16 on the GPU and on the CPU" $rc
  if [ $rc = 0 ]; then
    metrics() {  # KEY FILE: the key's values in metrics.jsonl order, one per line
      grep -o "\"$1\": *[-+0-9.eE]*" "$2" | sed 's/.*: *//'
    }
    worst=0
    for key in loss grad_norm entropy; do
      w=$(paste <(metrics $key "$log_dir/train_bf16/metrics.jsonl") \
        <(metrics $key "$log_dir/train_bf16_cpu/metrics.jsonl") | awk -v w="$worst" '
        { d = $1 - $2; if (d < 0) d = -d; r = $2 < 0 ? -$2 : $2; if (r > 0) d /= r;
          if (d > w) w = d; n++ } END { if (n != 6) w = 1e9; print w }')
      worst=$w
    done
    echo "bf16, 6 steps: largest relative difference from the CPU's bf16 run $worst"
    BF16_BOUND=5e-3
    step "sft train --bf16 on the GPU within $BF16_BOUND of the CPU ($worst)" \
      "$(awk -v w="$worst" -v b="$BF16_BOUND" 'BEGIN { print (w <= b) ? 0 : 1 }')"
  fi
  if [ -n "$sanitizer" ] && [ "$(elapsed)" -lt 420 ]; then
    timeout 90 "$sanitizer" --tool memcheck --error-exitcode 1 "$sft" train "${train_flags[@]}" \
      --max_steps 3 --output_dir "$log_dir/train_memcheck" > "$log_dir/train_memcheck.log" 2>&1
    rc=$?
    tail -5 "$log_dir/train_memcheck.log"
    step "compute-sanitizer memcheck of sft train (3 steps)" $rc
  fi

  echo "== cuBLASLt bf16 GEMM timing, Qwen3-0.6B shapes (8 × 1024 tokens)"
  timeout 120 "$binary" --gtest_color=no --gtest_also_run_disabled_tests \
    --gtest_filter='CudaGemmTiming.*' 2>&1 | tee "$log_dir/gemm_timing.txt"
  step "GEMM timing" "${PIPESTATUS[0]}"

  nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,temperature.gpu --format=csv
  finish
}

# A pipeline, not exec > >(tee): the log is complete when the script returns.
check 2>&1 | tee "$log_dir/device_check.log"
exit "${PIPESTATUS[0]}"
