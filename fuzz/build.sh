#!/usr/bin/env bash
# Builds the libFuzzer targets of the file loaders with Debian's clang 14 under ASan + UBSan,
# and their seed corpora (files written by xtgrad's own writers, plus the committed files of
# other writers in tests/data). See docs/reliability.md.
#   fuzz/build.sh [OUT_DIR]     (default build-fuzz; run under the build lock)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-fuzz}
cxx=${CXX_FUZZ:-clang++-14}
mkdir -p "$out/obj" "$out/seeds/safetensors" "$out/seeds/npy"

# Only the loaders and what they use: no BLAS, no xsimd (its allocator would need the same
# define in every file; these three files do not compute).
flags=(-std=c++20 -O1 -g -I. -fno-omit-frame-pointer
       -fsanitize=address,undefined -fno-sanitize-recover=all
       $(pkg-config --cflags xtensor fmt nlohmann_json))
libs=($(pkg-config --libs fmt))
loaders=(autograd/atomic_file.cpp autograd/grad_mode.cpp autograd/npy.cpp nn/safetensors.cpp)

objects=()
for src in "${loaders[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
  objects+=("$obj")
done
for target in safetensors npy; do
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "fuzz/${target}_fuzzer.cpp" "${objects[@]}" "${libs[@]}" -o "$out/${target}_fuzzer"
done
# The seed writer is an ordinary program (no -fsanitize=fuzzer: it has its own main).
"$cxx" "${flags[@]}" fuzz/make_seeds.cpp "${objects[@]}" "${libs[@]}" -o "$out/make_seeds"
"$out/make_seeds" "$out/seeds/safetensors" "$out/seeds/npy"
cp tests/data/safetensors/*.safetensors "$out/seeds/safetensors/"
cp tests/data/npy/*.npy "$out/seeds/npy/"
echo "built $out/safetensors_fuzzer and $out/npy_fuzzer; seeds in $out/seeds"
