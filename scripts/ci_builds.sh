#!/usr/bin/env bash
# The builds a user's machine may do differently from scripts/test.sh's GCC 12 (issue 26), each in a
# folder of its own, warnings as errors (INCA_WERROR, default ON here):
#   build-clang/    clang, Release: builds and runs the whole suite
#   build-fortify/  GCC with Ubuntu's hardening defaults (-O2 -D_FORTIFY_SOURCE=3
#                   -fstack-protector-strong -Wformat-security): builds (the warnings are the check)
#   build-blis/     Debian's BLIS instead of OpenBLAS (CBLAS calls only; OpenBLAS's thread control
#                   is optional): builds and runs the suites that do the arithmetic
# CUDA is off in all three (the Release build of scripts/test.sh compiles it).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
werror="${INCA_WERROR:-ON}"

echo "== clang"
cmake -S . -B build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release -DINCA_CUDA=OFF \
  -DINCA_WERROR="$werror" >/dev/null
cmake --build build-clang -j"$jobs"
ctest --test-dir build-clang --output-on-failure -j"$jobs"

echo "== GCC, fortified"
cmake -S . -B build-fortify -DCMAKE_BUILD_TYPE=Release -DINCA_CUDA=OFF -DINCA_WERROR="$werror" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG -D_FORTIFY_SOURCE=3 -fstack-protector-strong -Wformat -Wformat-security" \
  >/dev/null
cmake --build build-fortify -j"$jobs"

echo "== BLIS"
blis_dir=/usr/lib/x86_64-linux-gnu/blis-openmp
if [ ! -e "$blis_dir/libblis.so" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libblis-dev
fi
# FAISS off: it brings its own BLAS into the link
cmake -S . -B build-blis -DCMAKE_BUILD_TYPE=Release -DINCA_CUDA=OFF -DUSE_FAISS=OFF -DINCA_WERROR="$werror" \
  -DINCA_BLAS="$blis_dir/libblis.so" -DINCA_BLAS_INCLUDE_DIR=/usr/include/x86_64-linux-gnu/blis-openmp >/dev/null
cmake --build build-blis -j"$jobs"
ctest --test-dir build-blis --output-on-failure -j"$jobs" -R 'test_(kernels|nn|optim|incagg|train|e2e_train)$'
