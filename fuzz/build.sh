#!/usr/bin/env bash
# Builds the libFuzzer targets of the file loaders and writers with Debian's clang 14 under
# ASan + UBSan, and their seed corpora (files written by xtgrad's own writers, plus the
# committed files of other writers in tests/data). See docs/reliability.md.
#   safetensors, npy   the loaders on arbitrary bytes
#   writers            save_npy / save_safetensors of arbitrary arrays, read back: must be equal
#   run_checkpoint     nn::load_run (metadata and optimizer state) and Generator::set_state on arbitrary
#                      bytes, all or nothing;
#                      needs a meson build of the library (LIB_BUILD_DIR), skipped without one
#   report_compare     report_compare's inputs (a downloaded JSON, a report.html) on arbitrary bytes, and
#                      the earlier page a resumed run's page keeps steps from (report/earlier_steps.hpp)
#   fixture_meta       a parity fixture's meta.json (tools/parity/fixture_meta.cpp) on arbitrary bytes
#   command_line       every program's command line (examples/common/cli.hpp) on arbitrary arguments;
#                      needs LIB_BUILD_DIR too
#   fuzz/build.sh [OUT_DIR [LIB_BUILD_DIR]]     (default build-fuzz; run under the build lock)
set -euo pipefail
cd "$(dirname "$0")/.."
# How many compiles run at once (see queue, below); checked before anything is written.
jobs=${XTGRAD_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz/build.sh: XTGRAD_JOBS must be a whole number >= 1, got '$jobs'" >&2; exit 2; }
out=${1:-build-fuzz}
lib_dir=${2:-}
cxx=${CXX_FUZZ:-clang++-14}
mkdir -p "$out/obj" "$out/seeds/safetensors" "$out/seeds/npy" "$out/seeds/writers" "$out/seeds/run_checkpoint" \
  "$out/seeds/report_compare" "$out/seeds/command_line" "$out/seeds/fixture_meta"

# Only the loaders and what they use: no BLAS, no xsimd (its allocator would need the same
# define in every file; these three files do not compute).
# One include root, as meson's build has it (README.md, "Layout"): <xtgrad/io/npy.hpp> through a link
# to the source root; -I. for the fuzzers' own helpers ("fuzz/fuzz_input.hpp").
mkdir -p "$out/include_root"
ln -sfn "$PWD" "$out/include_root/xtgrad"
flags=(-std=c++20 -O1 -g -I"$out/include_root" -I. -fno-omit-frame-pointer
       -fsanitize=address,undefined -fno-sanitize-recover=all
       $(pkg-config --cflags xtensor fmt nlohmann_json))
libs=($(pkg-config --libs fmt))
loaders=(io/atomic_file.cpp io/bounded_json.cpp autograd/array_allocator.cpp autograd/env_switch.cpp autograd/speed_switches.cpp autograd/page_moves.cpp autograd/grad_mode.cpp
         autograd/utf8_text.cpp io/npy.cpp io/safetensors.cpp simd/cpu_model.cpp)

# Compiles and links run $jobs at a time (XTGRAD_JOBS, default 2; one after the other they took
# ~95 s of CI on one core): `queue CMD...` starts one, first waiting for the oldest when $jobs
# run; `drain` waits for all. A failed command fails the build (set -e on wait's status).
running=()
queue() {
  if [ "${#running[@]}" -ge "$jobs" ]; then wait "${running[0]}"; running=("${running[@]:1}"); fi
  "$@" & running+=($!)
}
drain() {
  local pid
  for pid in "${running[@]}"; do wait "$pid"; done
  running=()
}

# Every object first (the loaders; report_compare's page checks, with the page text generated as
# meson does; load_run's two files, below), then every program.
objects=()
for src in "${loaders[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  queue "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  objects+=("$obj")
done
python3 report/embed_page.py "$out/obj/report_page_html.cpp" report/page.html
report_objects=()
for src in report/page.cpp report/report_data.cpp report/earlier_steps.cpp "$out/obj/report_page_html.cpp"; do
  obj="$out/obj/report_$(basename "$src" .cpp).o"
  queue "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  report_objects+=("$obj")
done
# load_run needs the whole library (modules, optimizers): the release build's libxtgrad.so,
# with the three files that read run checkpoints (and the generator states in them) compiled here again, instrumented, so that the
# fuzzer's coverage follows their branches (the executable's copies are the ones it calls).
if [ -n "$lib_dir" ]; then
  lib_dir=$(cd "$lib_dir" && pwd)
  run_flags=("${flags[@]}" -DXTENSOR_USE_XSIMD)
  run_objects=()
  for src in nn/checkpoint.cpp nn/run_fields.cpp random/generator_state.cpp; do
    obj="$out/obj/run_$(echo "$src" | tr / _).o"
    queue "$cxx" "${run_flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
    run_objects+=("$obj")
  done
fi
drain

for target in safetensors npy writers; do
  queue "$cxx" "${flags[@]}" -fsanitize=fuzzer "fuzz/${target}_fuzzer.cpp" "${objects[@]}" "${libs[@]}" -o "$out/${target}_fuzzer"
done
# The seed writers are ordinary programs (no -fsanitize=fuzzer: each has its own main).
queue "$cxx" "${flags[@]}" fuzz/make_seeds.cpp "${objects[@]}" "${libs[@]}" -o "$out/make_seeds"
queue "$cxx" "${flags[@]}" -fsanitize=fuzzer fuzz/report_compare_fuzzer.cpp "${objects[@]}" "${report_objects[@]}" \
  "${libs[@]}" -o "$out/report_compare_fuzzer"
queue "$cxx" "${flags[@]}" -fsanitize=fuzzer fuzz/fixture_meta_fuzzer.cpp tools/parity/fixture_meta.cpp "${objects[@]}" \
  "${libs[@]}" -o "$out/fixture_meta_fuzzer"
queue "$cxx" "${flags[@]}" fuzz/make_report_seeds.cpp "${objects[@]}" "${report_objects[@]}" "${libs[@]}" \
  -o "$out/make_report_seeds"
if [ -n "$lib_dir" ]; then
  link=("$lib_dir/libxtgrad.so" "-Wl,-rpath,$lib_dir" -Wl,-rpath-link,/usr/lib/x86_64-linux-gnu/openmpi/lib "${libs[@]}")
  queue "$cxx" "${run_flags[@]}" -fsanitize=fuzzer fuzz/run_checkpoint_fuzzer.cpp "${run_objects[@]}" "${link[@]}" \
    -o "$out/run_checkpoint_fuzzer"
  queue "$cxx" "${run_flags[@]}" fuzz/make_run_seeds.cpp "${run_objects[@]}" "${link[@]}" -o "$out/make_run_seeds"
  queue "$cxx" "${run_flags[@]}" -fsanitize=fuzzer fuzz/command_line_fuzzer.cpp "${link[@]}" -o "$out/command_line_fuzzer"
fi
drain

"$out/make_seeds" "$out/seeds/safetensors" "$out/seeds/npy"
cp tests/data/safetensors/*.safetensors "$out/seeds/safetensors/"
cp tests/data/npy/*.npy "$out/seeds/npy/"
# any bytes are a recipe: the first 512 of the npy files (no pipe into head: under pipefail, cat
# killed by SIGPIPE when head stops reading would fail the build now and then)
cat tests/data/npy/*.npy >"$out/seeds/writers/npy_all"
head -c 512 "$out/seeds/writers/npy_all" >"$out/seeds/writers/npy_bytes"
rm "$out/seeds/writers/npy_all"
printf '\x02\x03\x04\x00\x00\x80\x7f\x01\x00\x00\xc0\x7f' >"$out/seeds/writers/inf_nan"
"$out/make_report_seeds" "$out/seeds/report_compare"
# every committed fixture's meta.json, named by its suite and case (one with relu_kinks made in tests)
for meta in tests/fixtures/*/*/meta.json; do
  case_dir=${meta%/meta.json}
  cp "$meta" "$out/seeds/fixture_meta/$(basename "$(dirname "$case_dir")")_$(basename "$case_dir").json"
done
printf '{"kind": "module", "grads": {"params": ["fc1.weight"]}, "relu_kinks": {"count": 2, "allowance": {"grad.param.fc1.weight": 0.5}}}' \
  >"$out/seeds/fixture_meta/relu_kinks.json"
built="safetensors npy writers report_compare fixture_meta"
if [ -n "$lib_dir" ]; then
  "$out/make_run_seeds" "$out/seeds/run_checkpoint"
  # command lines the programs' docs give, and the mistakes the attacks on them tried: printf
  # formats, \000 between arguments; the first byte picks whether --out is required (odd: it is)
  seed=0
  for format in '\001--steps\00010\000--seed\000042\000--out\000run' '\000--threads=2\000--lr\0001e-3\000--adam\000data.bin' \
                '\000--names\000a,b\000c\000--dropout\0000.5\000--\000--file' '\001--help' \
                '\000--steps\0000x10\000--seed\000-1\000--out=\000--adam=2' '\000--lr\000nan\000--threads\000999' \
                '\000--out\000\377\033[2J\000--names\000\345\214\227\344\272\254\012'; do
    printf "$format" >"$out/seeds/command_line/seed$seed"; seed=$((seed + 1))
  done
  built="$built run_checkpoint command_line"
fi
echo "built the fuzz targets $built in $out; seeds in $out/seeds"
