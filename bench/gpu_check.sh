#!/usr/bin/env bash
# The GPU check (issue 11), one prepared script: builds with CUDA, runs the gpu-labelled tests
# (every op of the kernel table CUDA vs CPU; the trainers CUDA vs CPU), trains Cora with IncAgg
# on the device (10 seeds), measures SpMM GB/s at F = 64/256 against the device's own
# device-to-device copy, and times full-batch, GAS (histories on the device and on the host) and
# IncAgg per epoch on a csbm graph, then prints one JSON summary line with the targets.
#
#   bash bench/gpu_check.sh                       on a GPU machine (--device cuda; ~5 min on an
#                                                 H200 with 16 cores, data generation included)
#   GPU_CHECK_DEVICE=auto GPU_CHECK_NODES=20000 bash bench/gpu_check.sh
#                                                 dry run of every step on a machine without one
# A GPU machine whose image lacks the Debian libraries: run `bash bench/gpu_deps.sh` here first
# and carry `.gpu-debs` with the run (see below).
#
# Logs and JSON Lines go to $GPU_CHECK_OUT (default: $OUT/gpu_check where the device tool sets
# $OUT, so they come back with the run; else out/gpu_check); the summary to stdout. The stores
# (GB at 1M nodes) go to $GPU_CHECK_DATA (default: a fresh temporary folder, removed after a
# successful run), outside what comes back.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICE=${GPU_CHECK_DEVICE:-cuda}
NODES=${GPU_CHECK_NODES:-1000000}
OUT=${GPU_CHECK_OUT:-${OUT:+$OUT/gpu_check}}
OUT=${OUT:-out/gpu_check}
DATA=${GPU_CHECK_DATA:-$(mktemp -d "${TMPDIR:-/tmp}/inca_gpu_check.XXXXXX")}
EPOCHS=${GPU_CHECK_EPOCHS:-3}
JOBS=$(nproc)
B=build-gpu/inca
mkdir -p "$OUT" "$DATA"
t_start=$(date +%s)
step() { echo "gpu_check: [$(( $(date +%s) - t_start )) s] $*" >&2; }
# every step writes its log under $OUT: on a failure show the newest one, or the GPU minutes are
# spent on a bare exit status
trap 'rc=$?; log=$(ls -t "$OUT"/*.log 2>/dev/null | head -1); echo "gpu_check: FAILED (exit $rc): $BASH_COMMAND" >&2;
      [ -n "$log" ] && { echo "--- tail of $log" >&2; tail -n 40 "$log" >&2; }' ERR

# Debian packages carried from a build machine (bench/gpu_deps.sh fills .gpu-debs; name it in the
# device tool's carry): unpacked outside /, and pkg-config, the compiler, CMake and the loader
# pointed at them (pkg-config only at them: its sysroot rewrites the carried .pc files' paths)
if ls .gpu-debs/*.deb >/dev/null 2>&1; then
  DEPS=${GPU_CHECK_DEPS:-${TMPDIR:-/tmp}/inca_deps}
  mkdir -p "$DEPS"
  for f in .gpu-debs/*.deb; do dpkg -x "$f" "$DEPS"; done
  L=$DEPS/usr/lib/x86_64-linux-gnu
  export PATH="$DEPS/usr/bin:$PATH"
  export PKG_CONFIG_LIBDIR="$L/pkgconfig:$L/openblas-pthread/pkgconfig:$DEPS/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$DEPS"
  export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$DEPS/usr/include:$DEPS/usr/include/x86_64-linux-gnu/openblas-pthread${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$L:$L/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$L:$L/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu_check: build dependencies from .gpu-debs unpacked into $DEPS" >&2
fi

# the C libraries CMake requires, all named at once (a fresh GPU machine may have only CUDA and
# Python; one failed start per missing package would spend its device minutes)
missing=""
command -v pkg-config >/dev/null || missing="pkg-config"
for m in lmdb numa check libcjson openblas zlib; do pkg-config --exists "$m" 2>/dev/null || missing="$missing $m"; done
echo '#include <metis.h>' | ${CC:-cc} -E -x c - >/dev/null 2>&1 || missing="$missing metis.h"
[ -z "$missing" ] || { echo "gpu_check: missing build dependencies:$missing (Debian packages: PKGS in scripts/setup.sh)" >&2; exit 1; }

step "build (Release, INCA_CUDA=$([ "$DEVICE" = cuda ] && echo ON || echo AUTO))"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DINCA_CUDA="$([ "$DEVICE" = cuda ] && echo ON || echo AUTO)" \
  >"$OUT/cmake.log"
# only what the steps below run (ctest -L gpu: test_backend_ops, test_device): the other ~30 test
# executables would spend GPU-machine minutes compiling
cmake --build build-gpu -j"$JOBS" --target inca test_backend_ops test_device >"$OUT/build.log"

step "gpu tests (ctest -L gpu: skipped without a device)"
ctest --test-dir build-gpu -L gpu --output-on-failure >"$OUT/ctest_gpu.log" 2>&1 || { cat "$OUT/ctest_gpu.log"; exit 1; }
gpu_tests=$(grep -E "tests passed|Skipped|Failed" "$OUT/ctest_gpu.log" | tr '\n' ' ' | sed 's/"/\x27/g')

step "Cora, IncAgg on $DEVICE, 10 seeds (the README's main job)"
$B ingest --format ogb data/cora --out "$DATA/cora.lmdb" --force >/dev/null
$B partition "$DATA/cora.lmdb" --parts 40 --method metis --seed 0 >/dev/null
$B train "$DATA/cora.lmdb" --model gcn --method incagg --parts 40 --batch-parts 10 --layers 2 --hidden 16 \
  --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --wd-first-layer --feature-norm row --epochs 200 --runs 10 \
  --seed 0 --device "$DEVICE" --json 2>"$OUT/cora.log" | tail -1 >"$OUT/cora.json"

step "SpMM GB/s vs device copy (R-MAT $NODES nodes, F = 64, 256)"
$B bench spmm --nodes "$NODES" --avg-degree 16 --features 64,256 --reps 5 --device "$DEVICE" \
  >"$OUT/spmm.jsonl" 2>"$OUT/spmm.log"

step "csbm $NODES nodes: generate, partition"
$B gen --kind csbm --nodes "$NODES" --avg-degree 20 --features 128 --classes 8 --seed 0 \
  --out "$DATA/csbm.lmdb" --force >/dev/null 2>"$OUT/gen.log"
$B partition "$DATA/csbm.lmdb" --parts 64 --method metis --seed 0 >/dev/null 2>>"$OUT/gen.log"
common=(--model gcn --layers 3 --hidden 256 --parts 64 --batch-parts 8 --epochs "$EPOCHS" --device "$DEVICE")

step "full-batch, $EPOCHS epochs"
$B train "$DATA/csbm.lmdb" --method full "${common[@]}" --json 2>"$OUT/full.log" | tail -1 >"$OUT/full.json"
step "GAS and IncAgg, histories on the device"
$B bench epoch "$DATA/csbm.lmdb" --methods gas,incagg --warmup-epochs 1 --eval-each-epoch "${common[@]}" \
  --history-location device --json 2>"$OUT/epoch_device.log" | tail -1 >"$OUT/epoch_device.json"
step "GAS and IncAgg, histories on the host"
$B bench epoch "$DATA/csbm.lmdb" --methods gas,incagg --warmup-epochs 1 --eval-each-epoch "${common[@]}" \
  --history-location host --json 2>"$OUT/epoch_host.log" | tail -1 >"$OUT/epoch_host.json"

step "summary"
python3 - "$OUT" "$gpu_tests" "$(( $(date +%s) - t_start ))" <<'PY'
import json, sys
out, tests, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
load = lambda f: json.loads(open(f"{out}/{f}").read().strip().splitlines()[-1])
cora, full, dev, host = load("cora.json"), load("full.json"), load("epoch_device.json"), load("epoch_host.json")
spmm = [json.loads(l) for l in open(f"{out}/spmm.jsonl") if l.strip()][-1]
f256 = spmm["features"].index(256)
s = {
    "device": cora["device"], "seconds": secs, "gpu_tests": tests,
    "cora_incagg_test_acc": cora["test_acc"], "cora_incagg_test_acc_std": cora["test_acc_std"],
    "cora_epoch_time_s": cora["epoch_time_s"],
    "spmm_copy_gbs": spmm["copy_gbs"], "spmm_over_copy_metis": spmm.get("spmm_over_copy_metis"),
    "spmm_over_copy_random": spmm["spmm_over_copy_random"],
    "full_epoch_time_s": full["epoch_time_s"], "full_test_acc": full["test_acc"],
    "gas_device_epoch_time_s": dev["gas_epoch_time_s"], "incagg_device_epoch_time_s": dev["incagg_epoch_time_s"],
    "gas_host_epoch_time_s": host["gas_epoch_time_s"], "incagg_host_epoch_time_s": host["incagg_epoch_time_s"],
    "gas_test_acc": dev["gas_test_acc"], "incagg_test_acc": dev["incagg_test_acc"],
}
s["incagg_over_gas_host"] = host["gas_epoch_time_s"] / host["incagg_epoch_time_s"]
s["incagg_over_gas_device"] = dev["gas_epoch_time_s"] / dev["incagg_epoch_time_s"]
s["targets"] = {
    "incagg_ge_5x_gas_host": s["incagg_over_gas_host"] >= 5,
    "incagg_ge_2x_gas_device": s["incagg_over_gas_device"] >= 2,
    "acc_within_0.5_points": abs(dev["gas_test_acc"] - dev["incagg_test_acc"]) <= 0.005,
    "spmm_ge_50pct_copy_f256": (spmm.get("spmm_over_copy_metis") or spmm["spmm_over_copy_random"])[f256] >= 0.5,
    "cora_incagg_ge_81": cora["test_acc"] >= 0.81,
}
print(json.dumps(s))
PY
[ -n "${GPU_CHECK_DATA:-}" ] || rm -rf "$DATA"
