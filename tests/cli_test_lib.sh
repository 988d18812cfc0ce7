# shellcheck shell=bash disable=SC2034  # sourced: the variables are its callers'
# Shared by the command-line test scripts, sourced with the build folder as its argument: the
# build and source folders, a scratch folder (removed at exit) as the working folder, the sizes the
# examples train at, and the checks expect, says, trained_nothing and losses. A failed check sets
# fail=1; each script ends with `exit $fail`.
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out" || exit 1
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

wg=("$build/examples/winter_games" --d-model 32 --d-ff 64 --d-k 8 --d-v 8 --layers 2 --heads 2 --lr 1e-3 --quiet --threads 1)
rc=("$build/examples/random_copy" --batch 2 --len 8 --vocab 20 --layers 1 --d-model 16 --heads 2 --d-ff 32 --lr 1e-3 --threads 1)

# expect STATUS NAME COMMAND...: runs it (10 s at most: a hang is a failure), checks the exit status.
# EXPECT_LIMIT=SECONDS expect ...: a longer limit for a command that really trains or benchmarks
# (the CI runs this script beside the sanitizer build, at twice the quiet machine's times).
expect() {
  local want=$1 name=$2; shift 2
  timeout "${EXPECT_LIMIT:-10}" "$@" >"$out/last.log" 2>&1
  local got=$?
  if [ "$got" -eq "$want" ]; then ok "$name (exit $got)"; else bad "$name: exit $got, expected $want"; sed 's/^/      /' "$out/last.log" | tail -n 8; fi
}
# the log of the last command contains TEXT
says() { if grep -qF -- "$1" "$out/last.log"; then ok "  ...says '$1'"; else bad "  ...does not say '$1'"; sed 's/^/      /' "$out/last.log" | tail -n 8; fi; }
# the last command trained nothing (the check came first)
trained_nothing() { if grep -qE '^(epoch +[0-9]|Epoch: [0-9])' "$out/last.log"; then bad "  ...trained before failing"; else ok "  ...before any training"; fi; }

# losses PATTERN LOG: the loss on each line of LOG that matches PATTERN
losses() { grep -E "$1" "$2" | sed -E 's/.*[Ll]oss:? ([-0-9.naif]+).*/\1/'; }
