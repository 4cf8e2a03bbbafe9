#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces joined by a veth pair (10.77.x.1 and .2),
# each with its own hostname (unshare --uts). mpirun runs in the first; OpenMPI's launch
# agent (plm_rsh_agent, normally ssh) is a script that enters the second namespace, and the
# ranks talk over TCP on the veth only. The collectives' tests run across the hosts, and a
# 2-host training run must give the one-host 2-rank result bit for bit.
# Needs root (ip netns); exits 77 (ctest: skipped) with a message where that is not allowed.
# Usage: netns_2host.sh SFT DIST_TESTS COMPARE ROOT WORK
set -euo pipefail
sft=$1 parallel_tests=$2 compare=$3 root=$4 work=$5
if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null || ! command -v unshare > /dev/null; then
  echo "skipped: the 2-host test needs root, ip and unshare (network namespaces)"
  exit 77
fi
tag=$$
a=sfta$tag b=sftb$tag net="10.77.$((tag % 250)).0"
prefix=${net%.0}
cleanup() {
  ip netns del "$a" 2> /dev/null || true
  ip netns del "$b" 2> /dev/null || true
}
trap cleanup EXIT
if ! ip netns add "$a" 2> /dev/null; then
  echo "skipped: creating a network namespace is not permitted here"
  exit 77
fi
ip netns add "$b"
ip link add "va$tag" type veth peer name "vb$tag"
ip link set "va$tag" netns "$a"
ip link set "vb$tag" netns "$b"
ip -n "$a" addr add "$prefix.1/24" dev "va$tag"
ip -n "$b" addr add "$prefix.2/24" dev "vb$tag"
for n in "$a" "$b"; do ip -n "$n" link set lo up; done
ip -n "$a" link set "va$tag" up
ip -n "$b" link set "vb$tag" up

rm -rf "$work"
mkdir -p "$work"
cat > "$work/agent.sh" << AGENT
#!/bin/sh
host=\$1; shift
exec ip netns exec $b unshare --uts sh -c "hostname \$host; \$*"
AGENT
chmod +x "$work/agent.sh"
printf "hosta slots=1\nhostb slots=1\n" > "$work/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SFT_CACHE_DIR="$work/cache"
mpirun_2host="mpirun -np 2 --hostfile $work/hosts --mca plm_rsh_agent $work/agent.sh \
  --mca btl tcp,self --mca btl_tcp_if_include $net/24 --mca oob_tcp_if_include $net/24 \
  ${ASAN_OPTIONS:+-x ASAN_OPTIONS}"
on_host_a() { timeout 120 ip netns exec "$a" unshare --uts sh -c "hostname hosta; $*"; }

on_host_a "$mpirun_2host $parallel_tests --gtest_filter=-CollectiveWatchdog.*"
args="--model_name_or_path $root/tests/fixtures/generate_text \
  --dataset_name $root/tests/fixtures/train_cli/train.jsonl --max_length 32 --learning_rate 2e-4 \
  --logging_steps 1 --gradient_checkpointing false --bf16 false --disable_tqdm true \
  --num_threads 1 --max_steps 6 --save_strategy no --per_device_train_batch_size 2"
on_host_a "$mpirun_2host $sft train $args --output_dir $work/two_hosts"
mpirun --oversubscribe -np 2 "$sft" train $args --output_dir "$work/one_host"
"$compare" --metrics "$work/one_host" "$work/two_hosts" 0
"$compare" "$work/one_host" "$work/two_hosts" 0
echo "2 hosts over TCP = 1 host, bit for bit"
