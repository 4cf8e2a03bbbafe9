#!/usr/bin/env bash
# Paired before/after timing of the training step: runs bench_train_step from two builds in
# alternation (A B A B ...), so both see the same machine state, for each mode given, and
# prints each run's tokens/s, the medians and the median of the per-pair ratios B / A.
# usage: bench/ab_train_step.sh BUILD_A BUILD_B [pairs=5] [bench_train_step args...]
#   e.g. bench/ab_train_step.sh build-before build 5 --shape 103m --steps 3 --bf16 1
set -euo pipefail
a=${1:?usage: bench/ab_train_step.sh BUILD_A BUILD_B [pairs] [args...]}
b=${2:?usage: bench/ab_train_step.sh BUILD_A BUILD_B [pairs] [args...]}
pairs=${3:-5}
shift $(($# < 3 ? $# : 3))
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}

rate() {  # tokens/s (mean of the steps after the warm-up) of one run
  "$1/bench/bench_train_step" "${@:2}" | sed -n 's/^tokens\/s \([0-9.]*\).*/\1/p'
}
ra=() rb=() ratios=()
for ((i = 1; i <= pairs; i++)); do
  x=$(rate "$a" "$@")
  y=$(rate "$b" "$@")
  ra+=("$x") rb+=("$y") ratios+=("$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.4f", y / x }')")
  echo "pair $i: A $x tokens/s, B $y tokens/s, B/A ${ratios[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "args: $*"
echo "median A $(median "${ra[@]}") tokens/s, B $(median "${rb[@]}") tokens/s, median B/A $(median "${ratios[@]}")"
