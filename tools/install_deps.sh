#!/usr/bin/env bash
# Installs what xtgrad needs to build and test, from Debian 12's packages only.
# Skips apt entirely when everything is already there (fast on a prepared machine).
set -euo pipefail
packages=(g++ meson ninja-build pkg-config cmake ccache libxtensor-dev libxsimd-dev libxtensor-blas-dev
          libopenblas-dev libdnnl-dev doctest-dev libfmt-dev nlohmann-json3-dev libcli11-dev
          gdb valgrind python3 librsvg2-bin fonts-noto-cjk graphviz
          clang-14 libclang-rt-14-dev   # the fuzz targets (fuzz/build.sh), the sanitizer build (tools/test.sh)
          libopenmpi-dev openmpi-bin    # data-parallel training (docs/distributed.md)
          chromium chromium-driver python3-selenium)   # the report page's browser test (docs/report.md)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
# As root (a fresh Debian container has no sudo) apt runs directly; as a user, through sudo.
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install_deps: run as root, or install sudo: these packages are missing: ${missing[*]}" >&2
    exit 1
  fi
  SUDO="sudo"
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
