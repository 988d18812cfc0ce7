# shellcheck shell=bash
# Where a one-thread benchmark run goes: sourced by bench/run.sh and bench/compare_builds.sh.
#
# A 2-vCPU guest can have one vCPU slower than the other for hours (the Zen 5's PVM guest, 12-04:
# Winter's 1-thread step 35-38 ms on vCPU 0, 45-47 on vCPU 1, every run), and an unpinned
# one-thread process lands on either: two sides compared that way read 25 % apart by chance. So
# each round pins its one-thread runs, both sides, to one CPU, and the rounds take the CPUs this
# process may use in turn (round 1 the first, round 2 the next, ...): each side sees the same ones.
# Runs on 2+ threads use every CPU and stay unpinned.

# The CPU for a run of $1 threads in round $2 (from 1), or nothing: 2+ threads, or one CPU only.
cpu_of_round() {
  local threads=$1 round=$2 cpus
  [[ $threads -eq 1 ]] || return 0
  cpus=$(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))') || return 0
  read -r -a cpus <<< "$cpus"
  ((${#cpus[@]} > 1)) || return 0
  echo "${cpus[$(((round - 1) % ${#cpus[@]}))]}"
}

# For a run of $1 threads in round $2: cpu (the CPU, or empty), pin (the command prefix that pins
# there, or none) and XTGRAD_BENCH_PINNED_CPU, which bench/results.py stamp records as pinned_cpu.
# shellcheck disable=SC2034  # pin: read by the scripts that source this
pin_round() {
  cpu=$(cpu_of_round "$1" "$2")
  pin=()
  [[ -z $cpu ]] || pin=(taskset -c "$cpu")
  export XTGRAD_BENCH_PINNED_CPU=$cpu
}

export XTGRAD_BENCH_PINNED_CPU=""  # no line is stamped as pinned until pin_round says so
