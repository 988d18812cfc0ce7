#!/usr/bin/env bash
# Usage: tools/suite_ranges.sh DIR JOBS
# Runs DIR's doctest suite on JOBS cores: its test cases, in their order, cut into 4 x JOBS ranges
# (doctest's --first / --last), one process each, handed out as processes finish (the sanitizer
# build's suite takes minutes, and one process would leave a core idle). Range K logs to
# DIR/test.K.log and its exit status to DIR/test.K.status; DIR/test.ranges lists "K FIRST LAST"
# per range, or is empty when the suite does not start. tools/test.sh counts the results (it may
# run this in the background, so the counting is not done here).
set -uo pipefail
dir=$1 jobs=$2
rm -f "$dir"/test.*.log "$dir"/test.*.status "$dir/test.ranges"
: >"$dir/test.ranges"
n=$("$dir/tests/xtgrad_tests" --count --no-intro=true | sed -nE 's/.*current filters: *([0-9]+).*/\1/p')
[ -n "$n" ] || exit 0
ranges=$((4 * jobs))
[ "$n" -ge "$ranges" ] || ranges=1
for ((k = 0; k < ranges; k++)); do echo "$k $((n * k / ranges + 1)) $((n * (k + 1) / ranges))"; done >"$dir/test.ranges"
xargs -P "$jobs" -L 1 bash -c '"$0/tests/xtgrad_tests" --no-intro=true --first="$2" --last="$3" \
  >"$0/test.$1.log" 2>&1; echo $? >"$0/test.$1.status"' "$dir" <"$dir/test.ranges"
