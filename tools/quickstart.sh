#!/usr/bin/env bash
# First command of the README: install what is missing, build (release), run the main example:
# the Winter Games translation of tutorial C (about 10 s of training on 2 cores).
#   bash tools/quickstart.sh [--jobs N] [winter_games options...]
# --jobs N (or XTGRAD_JOBS=N) caps the parallel compile jobs: each takes a core and much memory
# (xtensor's templates), so on a shared or small machine ninja's default (cores + 2) can swap or starve others.
set -euo pipefail
cd "$(dirname "$0")/.."
# Checked before anything is installed or built: ninja took `-j 0` as no limit, `-j x` failed late.
jobs=${XTGRAD_JOBS:-} from="XTGRAD_JOBS"
case "${1:-}" in
  --jobs | -j) [ $# -ge 2 ] || { echo "quickstart: $1 needs a number, e.g. $1 2" >&2; exit 2; }
               jobs=$2 from=$1; shift 2 ;;
  --jobs=*) jobs=${1#--jobs=} from=--jobs; shift ;;
esac
if [ -n "$jobs" ] && ! [[ "$jobs" =~ ^[1-9][0-9]{0,3}$ ]]; then
  echo "quickstart: $from must be a whole number from 1 to 9999, got '$jobs'" >&2; exit 2
fi
bash tools/install_deps.sh
meson setup build --buildtype=release >/dev/null 2>&1 || meson setup --reconfigure build --buildtype=release >/dev/null
ninja -C build ${jobs:+-j "$jobs"} examples/winter_games   # only what it runs; `ninja -C build learn` adds the learner path's
exec build/examples/winter_games "$@"
