#!/usr/bin/env bash
# First command of the README: install what is missing, build (release), run the main example:
# the Winter Games translation of tutorial C (about 10 s of training on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
meson setup build --buildtype=release >/dev/null 2>&1 || meson setup --reconfigure build --buildtype=release >/dev/null
ninja -C build examples/winter_games   # only what it runs; tools/test.sh builds the rest
exec build/examples/winter_games "$@"
