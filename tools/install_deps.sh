#!/usr/bin/env bash
# Installs what xtgrad needs to build and test, from Debian 12's packages only.
# Skips apt entirely when everything is already there (fast on a prepared machine).
set -euo pipefail
packages=(g++ meson ninja-build pkg-config cmake libxtensor-dev libxsimd-dev libxtensor-blas-dev
          libopenblas-dev doctest-dev libfmt-dev nlohmann-json3-dev libcli11-dev libbenchmark-dev
          gdb python3 librsvg2-bin fonts-noto-cjk graphviz libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
