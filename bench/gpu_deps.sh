#!/usr/bin/env bash
# Fetches, on this machine (Debian 12, package registry reachable), the Debian packages inca's
# build needs that a GPU machine's image lacks (its image has CUDA, CMake and Python, nothing can
# be fetched there): the .debs go to .gpu-debs/ (git-ignored, about 14 MB). Name `.gpu-debs` in
# the device tool's `carry`; bench/gpu_check.sh unpacks them (dpkg -x, outside /) and points
# pkg-config, the compiler and the loader at them.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS="liblmdb-dev liblmdb0 libnuma-dev libnuma1 check libsubunit-dev libsubunit0 libcjson-dev libcjson1
libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libmetis-dev libmetis5
zlib1g-dev pkgconf pkgconf-bin libpkgconf3"
mkdir -p .gpu-debs
# shellcheck disable=SC2086
(cd .gpu-debs && apt-get download $PKGS)
du -sh .gpu-debs
