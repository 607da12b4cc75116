#!/usr/bin/env bash
# Runs the whole test suite: a Release build (build/) through ctest, then the same suite built
# with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/). Set INCA_TEST_ASAN=0 to skip
# the sanitizer pass. Tests that need data which is absent (Fashion-MNIST, ../shared) skip.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DINCA_WERROR="${INCA_WERROR:-OFF}" >/dev/null
cmake --build build -j"$jobs"
python3 scripts/check_circles.py build   # no circle of files by includes or calls (issue 26)
python3 scripts/check_functions.py 80  # no function over 80 lines outside tests (issue 26)
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${INCA_TEST_ASAN:-1}" = 1 ]; then
  # CUDA off: cudart under ASan needs ASAN_OPTIONS=protect_shadow_gap=0, and the CUDA code is
  # compiled (and its host-side bodies tested) by the Release build above; no GPU here to run it.
  # -O2 -g without -DNDEBUG: the asserts stay on under the sanitizers
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DINCA_SANITIZE=ON -DINCA_CUDA=OFF \
    -DINCA_WERROR="${INCA_WERROR:-OFF}" >/dev/null
  cmake --build build-asan -j"$jobs"
  # Check forks each test; CK_FORK=no keeps leak reports in one process per suite.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    INCA_ASAN=1 CK_FORK=no ctest --test-dir build-asan --output-on-failure -j"$jobs"
fi
