#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c; clang, ASan + UBSan, build-fuzz/) and runs
# each for SECONDS (default 30); exits 1 when any target crashes, leaks, trips a sanitizer or
# runs out of memory, naming the target and the artifact that reproduces it.
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]       e.g. bash scripts/fuzz.sh 3600 ogb npy
# Seeds come from tests/data/bad (folders packed into one input, see tests/fuzz/fuzz_util.h)
# and from the targets themselves (INCA_FUZZ_SEED_OUT); what a run finds is kept in
# build-fuzz/corpus/<target>, so longer or repeated runs continue from there.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ogb edgelist metis idx csv npy checkpoint store_meta)
B=build-fuzz

cmake -S . -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINCA_FUZZ=ON -DINCA_WERROR="${INCA_WERROR:-OFF}" \
  -DINCA_CUDA=OFF -DUSE_MPI=OFF >/dev/null
cmake --build "$B" -j"$(nproc)" --target fuzz_all >/dev/null

SEP=$'\n--inca-fuzz-file--\n'
# pack FILE... into one multi-file input (a missing file ends the list early: later ones absent)
pack() {
  local out="$1" first=1 f
  shift
  : >"$out"
  for f in "$@"; do
    [ -e "$f" ] || break
    [ $first = 1 ] || printf '%s' "$SEP" >>"$out"
    first=0
    cat "$f" >>"$out"
  done
}

seeds_for() {   # target seed-dir
  local t="$1" dir="$2" e
  case "$t" in
  edgelist | metis)
    for e in tests/data/bad/"$t"-*; do cp "$e" "$dir/"; done
    if [ "$t" = edgelist ]; then
      printf '0 1\n1 2\n# c\n2 0\n%s0 1\n1 0\n2 -1\n%s0 0.5 1\n1 1 0\n2 0 0\n' "$SEP" "$SEP" >"$dir/valid"
    else
      printf '%% c\n3 2\n2\n1 3\n2\n' >"$dir/valid"
    fi
    ;;
  ogb)
    for e in tests/data/bad/ogb-*; do
      pack "$dir/$(basename "$e")" "$e"/raw/num-node-list.csv "$e"/raw/num-edge-list.csv "$e"/raw/edge.csv \
        "$e"/raw/node-feat.csv "$e"/raw/node-label.csv "$e"/split/public/train.csv "$e"/split/public/valid.csv \
        "$e"/split/public/test.csv
    done
    printf '4\n%s3\n%s0,1\n1,2\n2,3\n%s0.5,1\n0,0.25\n1,0\n0,0\n%s0\n1\n1\n0\n%s0\n1\n%s2\n%s3\n' \
      "$SEP" "$SEP" "$SEP" "$SEP" "$SEP" "$SEP" "$SEP" >"$dir/valid"
    ;;
  idx)
    for e in tests/data/bad/idx-*; do
      pack "$dir/$(basename "$e")" "$e"/train-images-idx3-ubyte "$e"/train-labels-idx1-ubyte \
        "$e"/t10k-images-idx3-ubyte "$e"/t10k-labels-idx1-ubyte
    done
    ;;
  csv)
    for e in tests/data/bad/csv-*; do pack "$dir/$(basename "$e")" "$e"/train.csv "$e"/valid.csv "$e"/test.csv; done
    printf '0,1,2\n1,0.5,0\n%s1,1,1\n%s0,0,0\n1,2,3\n' "$SEP" "$SEP" >"$dir/valid"
    ;;
  npy | checkpoint | store_meta)
    INCA_FUZZ_SEED_OUT="$dir" "$B/fuzz_$t" -runs=0 "$dir" >/dev/null 2>&1
    ;;
  esac
}

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export INCA_FUZZ_TMP="$tmp"
failed=()
for t in "${targets[@]}"; do
  bin="$B/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz.sh: no target '$t' (tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
  seeds="$tmp/seeds-$t" corpus="$B/corpus/$t" art="$B/artifacts/$t/"
  mkdir -p "$seeds" "$corpus" "$art"
  seeds_for "$t" "$seeds"
  log="$B/artifacts/$t.log"
  # -malloc_limit_mb: a parser that allocates what a header declares, before checking the file
  # can hold it, is a finding too
  if "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -print_final_stats=1 -artifact_prefix="$art" "$corpus" "$seeds" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$t")
  fi
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  printf 'fuzz %-11s %-6s %8s executions in %ss, corpus %s inputs\n' "$t" "$status" "${execs:-?}" "$secs" \
    "$(find "$corpus" -type f | wc -l)"
  if [ "$status" = FAILED ]; then
    # no sanitizer line (a target killed by a signal) must not end the loop under set -e
    { grep -E "^==[0-9]+==ERROR|runtime error|SUMMARY|Test unit written" "$log" || echo "(no sanitizer line; see $log)"; } |
      head -5 | sed 's/^/    /'
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in: ${failed[*]} (logs and reproducers in $B/artifacts/)" >&2
  exit 1
fi
