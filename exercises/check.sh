#!/usr/bin/env bash
# The exercises cannot pass vacuously: with the reference solutions every test passes, and as
# shipped every exercise fails with the message its expected_failure.txt holds (each line of it
# must appear in that exercise's output).
# usage: exercises/check.sh SOLVED_PROGRAM SHIPPED_PROGRAM
set -euo pipefail
solved=$1; shipped=$2
here=$(cd "$(dirname "$0")" && pwd)
status=0
for dir in "$here"/*/; do
  name=$(basename "$dir")
  [ -f "$dir/test.cpp" ] || continue
  before=$status
  for f in exercise.cpp solution.cpp HINTS.md expected_failure.txt; do
    [ -f "$dir/$f" ] || { echo "FAIL $name: no $f"; status=1; }
  done
  grep -q "'$name'" "$here/meson.build" || { echo "FAIL $name: not listed in exercises/meson.build"; status=1; }
  out=$("$solved" --no-intro=true -ts="$name" 2>&1) || { echo "FAIL $name: the solution fails:"; echo "$out" | tail -n 20; status=1; continue; }
  summary=$(echo "$out" | grep "test cases:" || true)
  if echo "$summary" | grep -qE "test cases: +0 "; then echo "FAIL $name: no test case ran"; status=1; continue; fi
  if out=$("$shipped" --no-intro=true -ts="$name" 2>&1); then
    echo "FAIL $name: passes as shipped, with its TODOs"; status=1; continue
  fi
  while IFS= read -r want; do
    [ -n "$want" ] || continue
    if ! grep -qF -- "$want" <<<"$out"; then
      echo "FAIL $name: as shipped, the output lacks: $want"; echo "$out" | tail -n 30; status=1
    fi
  done <"$dir/expected_failure.txt"
  [ "$status" -ne "$before" ] || echo "ok   $name: solved passes ($(echo "$summary" | sed -E 's/.*test cases: *([0-9]+).*/\1/') test cases), shipped fails as expected"
done
# The runner's watchdog (main.cpp): a case that never returns is stopped, with a message naming it.
out=$(XTGRAD_GRADER_SELF_TEST=1 XTGRAD_GRADER_SECONDS=1 timeout 30 "$shipped" -tc="grader_self_test*" 2>&1) && rc=0 || rc=$?
want="The grader stopped 'grader_self_test: a case that never returns is stopped', on the self-test's endless loop: it ran for 1 s without returning"
if [ "$rc" -eq 1 ] && grep -qF -- "$want" <<<"$out"; then echo "ok   the watchdog stops a case that never returns"
else echo "FAIL the watchdog: exit $rc (1 expected), output:"; echo "$out" | tail -n 5; status=1; fi
# The graders' own checks: known wrong answers get the message that names their mistake.
out=$(XTGRAD_GRADER_SELF_TEST=1 timeout 120 "$solved" --no-intro=true -tc="grader_self_test: wrong answers*" 2>&1) && rc=0 || rc=$?
if [ "$rc" -eq 0 ] && ! grep -qE "test cases: +0 " <<<"$out"; then echo "ok   the graders name known wrong answers ($(grep -oE "test cases: *[0-9]+" <<<"$out"))"
else echo "FAIL the graders' checks of known wrong answers: exit $rc, output:"; echo "$out" | tail -n 30; status=1; fi
# A limit that is not plain digits from 1 to 86400 is refused before any case runs (exit 2), its
# bytes escaped in the message.
for bad in 0 -1 abc " 5" +5 86401 99999999999999999999 1.5 $'\xff\x01'; do
  out=$(XTGRAD_GRADER_SECONDS="$bad" timeout 30 "$shipped" -ts=01_sigmoid 2>&1) && rc=0 || rc=$?
  if [ "$rc" -eq 2 ] && grep -q "^XTGRAD_GRADER_SECONDS must be a whole number of seconds from 1 to 86400, not '[ -~]*'$" <<<"$out" &&
     ! grep -q "test cases:" <<<"$out"; then :
  else echo "FAIL XTGRAD_GRADER_SECONDS=$(printf '%q' "$bad"): exit $rc (2 expected), output:"; echo "$out" | tail -n 3; status=1; fi
done
[ "$status" -ne 0 ] || echo "ok   XTGRAD_GRADER_SECONDS that is no whole number from 1 to 86400 is refused"
exit "$status"
