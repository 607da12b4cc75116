#!/usr/bin/env bash
# One command for a fresh Debian machine: installs every Debian package inca needs, builds it in
# Release under build/, and runs the main job on the bundled Cora (data/cora): ingest into an
# LMDB store, METIS partitioning, and IncAgg training of a 2-layer GCN (Kipf & Welling settings).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS="build-essential cmake pkg-config liblmdb-dev lmdb-utils libmetis-dev libnuma-dev check
libsubunit-dev libcjson-dev libopenblas-dev zlib1g-dev libopenmpi-dev openmpi-bin libptscotch-dev dataset-fashion-mnist
clang libclang-rt-14-dev libomp-dev python3 python3-matplotlib python3-venv libfaiss-dev"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# every package installed (dpkg -s also succeeds for one removed with its config files kept)
# shellcheck disable=SC2086
if [ "$(dpkg-query -W -f='${Status}\n' $PKGS 2>/dev/null | grep -c '^install ok installed$')" -ne "$(echo $PKGS | wc -w)" ]; then
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $PKGS
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DINCA_WERROR="${INCA_WERROR:-OFF}"
cmake --build build -j"$(nproc)"

[ "${INCA_SETUP_BUILD_ONLY:-0}" = 1 ] && exit 0
mkdir -p out
build/inca ingest --format ogb data/cora --out out/cora.lmdb --force
build/inca info out/cora.lmdb
build/inca partition out/cora.lmdb --parts 40 --method metis --seed 0
build/inca train out/cora.lmdb --model gcn --method incagg --parts 40 --batch-parts 10 \
  --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --wd-first-layer \
  --feature-norm row --epochs 200 --runs 10 --seed 0 --json
