#!/usr/bin/env bash
# Data-parallel training across a real network on one machine (docs/distributed.md; part of
# tools/test.sh): two network namespaces joined by a veth pair are two "hosts", one process in
# each; OpenMPI talks TCP only (btl tcp,self: no shared memory), and mpirun starts the remote rank
# through a launcher that enters its namespace instead of ssh (plm_rsh_agent).
#   1. DDP with Adam and with ZeroRedundancyOptimizer give the losses of one process (1e-6);
#   2. the bytes that cross the veth pair per step match tools/ddp_cost_model.py --wire-bytes
#      (payload + TCP/IP headers: measured / predicted in [0.98, 1.1], the low end for the noise of
#      connection set-up that the difference of two runs leaves);
#   3. the overlap of the bucket allreduces with backward over TCP, bucket by bucket;
#   4. the rank on host 1 killed mid-step, survivors left running (mpirun's recovery mode): rank 0
#      exits with an Error naming rank 1, and the checkpoint before resumes over the network.
#   tests/distributed/run_netns_test.sh BUILD_DIR
# Needs root (CAP_NET_ADMIN): skips (exit 0) with a message where `ip netns add` is refused, or
# without MPI. Traffic stays between the two namespaces it makes; they are removed on exit.
set -uo pipefail
build=$1
prog="$build/tests/zero_run"
source "$(dirname "$0")/mpi_common.sh"
if ! command -v ip >/dev/null; then echo "  skip: no 'ip' (iproute2) to make network namespaces"; exit 0; fi
h0="xtgrad-h0-$$" h1="xtgrad-h1-$$"  # per run: concurrent runs do not collide
if ! ip netns add "$h0" 2>/dev/null; then
  echo "  skip: 'ip netns add' is not permitted here (needs root with CAP_NET_ADMIN); the 2-host TCP test did not run"
  exit 0
fi
cleanup() { ip netns del "$h0" 2>/dev/null; ip netns del "$h1" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT

# The two hosts: 10.231.0.1 in $h0, 10.231.0.2 in $h1, a /30 of their own (the addresses exist
# only inside these namespaces; nothing is routed anywhere else). Deleting a namespace deletes its veth end.
if ! { ip netns add "$h1" && ip link add xt-veth0 netns "$h0" type veth peer name xt-veth1 netns "$h1" \
       && ip -n "$h0" addr add 10.231.0.1/30 dev xt-veth0 && ip -n "$h0" link set xt-veth0 up && ip -n "$h0" link set lo up \
       && ip -n "$h1" addr add 10.231.0.2/30 dev xt-veth1 && ip -n "$h1" link set xt-veth1 up && ip -n "$h1" link set lo up; }; then
  bad "could not build the two namespaces and their veth pair"; exit 1
fi
# mpirun's launcher (where ssh would be): "agent HOST COMMAND..." runs COMMAND in HOST's namespace.
cat >"$out/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in
  10.231.0.1) ns=$h0 ;;
  10.231.0.2) ns=$h1 ;;
  *) echo "netns agent: unknown host '\$host'" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$out/agent.sh"
printf '10.231.0.1 slots=1\n10.231.0.2 slots=1\n' >"$out/hosts"
# mpirun itself runs on host 0; one rank per host (--map-by node); TCP over the veth only.
mpirun_extra=()  # mpirun's own options for the next call
mpi_hosts() {
  ip netns exec "$h0" timeout 300 mpirun -np 2 --hostfile "$out/hosts" --map-by node --bind-to none \
    "${mpirun_extra[@]}" --mca plm_rsh_agent "$out/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include 10.231.0.0/30 --mca oob_tcp_if_include 10.231.0.0/30 "$prog" "$@"
}
# bytes both ends of the veth pair sent so far
wire() { echo $(( $(ip netns exec "$h0" cat /sys/class/net/xt-veth0/statistics/tx_bytes) \
                + $(ip netns exec "$h1" cat /sys/class/net/xt-veth1/statistics/tx_bytes) )); }
same_losses() {
  awk -v tol="$3" 'FNR == NR && /^step/ {ref[$2] = $4; next}
       /^step/ {n++; if (!($2 in ref)) miss = 1; d = $4 - ref[$2]; if (d < 0) d = -d; if (d > max) max = d}
       END {printf "%d steps, max |loss - reference| = %.2g\n", n, max; exit !(n > 0 && !miss && max <= tol)}' "$2" "$1"
}

model=(--model b --vocab 2000 --d-model 64 --batch 6)
"$prog" "${model[@]}" --optimizer adam --steps 10 >"$out/one.log" 2>&1 || { bad "one-process reference run"; cat "$out/one.log"; }
params=$(awk '/^parameters/ {print $2}' "$out/one.log")
for opt in adam zero; do
  # bytes per step: the difference of a 10-step and a 2-step run (start-up and the first
  # broadcast of the model cancel out, up to a few kB of connection set-up), over the 8 steps between
  b0=$(wire); mpi_hosts "${model[@]}" --optimizer "$opt" --steps 2 >"$out/$opt.2.log" 2>&1; rc2=$?
  b1=$(wire); mpi_hosts "${model[@]}" --optimizer "$opt" --steps 10 >"$out/$opt.10.log" 2>&1; rc6=$?
  b2=$(wire)
  zero=(); [ "$opt" = zero ] && zero=(--zero)
  predicted=$(python3 "$(dirname "$0")/../../tools/ddp_cost_model.py" --wire-bytes "$params" --hosts 2 "${zero[@]}")
  per_step=$(( (b2 - b1 - (b1 - b0)) / 8 ))
  name="2 hosts over TCP, $([ "$opt" = zero ] && echo ZeroRedundancyOptimizer || echo 'DDP with Adam')"
  if [ "$rc2" -eq 0 ] && [ "$rc6" -eq 0 ] && losses=$(same_losses "$out/$opt.10.log" "$out/one.log" 1e-6); then
    ok "$name = 1 process: $losses"
  else
    bad "$name against 1 process"; cat "$out/$opt.10.log"
  fi
  if awk -v m="$per_step" -v p="$predicted" 'BEGIN {exit !(p > 0 && m >= 0.98 * p && m <= 1.1 * p)}'; then
    ok "$name: $per_step bytes per step on the wire, cost model $predicted ($params parameters): ratio $(awk -v m="$per_step" -v p="$predicted" 'BEGIN {printf "%.4f", m / p}')"
  else
    bad "$name: $per_step bytes per step on the wire, cost model $predicted"
  fi
done
if mpi_hosts --model b --vocab 8000 --d-model 128 --batch 32 --bucket-mb 1 --steps 3 --timeline >"$out/timeline.log" 2>&1 \
   && line=$(awk -f "$(dirname "$0")/overlap.awk" "$out/timeline.log"); then
  ok "overlap, 2 hosts over TCP: $line"
else
  bad "overlap timeline over TCP: ${line:-}"; cat "$out/timeline.log"
fi
# 4. Host 1's rank killed (SIGKILL) in step 4, after the checkpoint of step 3 (ZeRO).
start=$SECONDS
mpirun_extra=(-x XTGRAD_DIST_TIMEOUT --mca orte_enable_recovery 1)
XTGRAD_DIST_TIMEOUT=5 mpi_hosts "${model[@]}" --optimizer zero --steps 10 --save-at 3 --save "$out/ck.safetensors" \
  --kill-rank 1 --kill-step 4 >"$out/killed.log" 2>&1
mpirun_extra=()
took=$((SECONDS - start))
if grep -q "^zero_run rank 0 of 2: .*did not complete within 5 s on rank 0 of 2: lost rank 1 (" "$out/killed.log" && [ "$took" -lt 60 ]; then
  ok "host 1's rank killed: rank 0 exits with an Error naming it after $took s"
else
  bad "host 1's rank killed ($took s)"; cat "$out/killed.log"
fi
if mpi_hosts "${model[@]}" --optimizer zero --steps 10 --resume "$out/ck.safetensors" >"$out/resumed.log" 2>&1 \
   && losses=$(same_losses "$out/resumed.log" "$out/zero.10.log" 0); then
  ok "the checkpoint of step 3 resumes on the 2 hosts: steps 4-10 as the uninterrupted run, $losses"
else
  bad "resume over the network after the kill"; cat "$out/resumed.log"
fi
exit $fail
