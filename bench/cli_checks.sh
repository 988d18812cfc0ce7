# Argument checks bench/run.sh and bench/compare_builds.sh share (sourced). Each prints the usage
# error and returns 1; the caller exits with status 2, before any run.

bench_configs="winter seed-d seed-b"  # xtgrad_bench's --config values

# needs_value PROG OPTION ARGS_LEFT: an option that takes a value has one (else bash's "unbound variable")
needs_value() { [[ $3 -ge 2 ]] || { echo "$1: $2 needs a value" >&2; return 1; }; }

# results_file PROG PATH: --out gets one JSON line per run as each finishes, so a new path or a
# regular file only (a fifo would block the run, a device would take the lines)
results_file() { [[ -z $2 || ! -e $2 || -f $2 ]] || { echo "$1: --out '$2' exists and is not a regular file" >&2; return 1; }; }

# positive_count PROG OPTION VALUE: a count of runs (--rounds) is a whole number from 1 to 1000
# (bash's arithmetic wraps past 2^63: 18446744073709551617 rounds would be 1)
positive_count() {
  [[ $3 =~ ^[1-9][0-9]{0,3}$ && $3 -le 1000 ]] || { echo "$1: $2 must be a whole number from 1 to 1000, got '$3'" >&2; return 1; }
}
