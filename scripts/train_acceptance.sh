#!/usr/bin/env bash
# Issue 3 acceptance: full-batch accuracies on the bundled Cora (10 seeds, public split) and
# Facebook GCN vs logistic regression, measured with the inca CLI. Usage:
#   scripts/train_acceptance.sh BUILD_DIR [WORK_DIR]
# Prints one JSON object per configuration (the --json line of `inca train`), prefixed by its name.
set -euo pipefail   # a failing train must fail the script (| tail -1 hid it under sh)
B=${1:?build dir}/inca
if [ $# -ge 2 ]; then W=$2; else W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; fi   # a temporary folder goes at the end
SRC=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${INCA_SHARED:-$SRC/../shared}
[ -d "$W/cora.store" ] || "$B" ingest --format ogb "$SRC/data/cora" --out "$W/cora.store" >&2
run() { name=$1; store=$2; shift 2; printf '%s ' "$name"; "$B" train "$store" "$@" --threads 1 --json | tail -1; }
C="$W/cora.store"
run gcn   "$C" --model gcn --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --wd-first-layer --epochs 200 --feature-norm row --runs 10
run sage  "$C" --model sage --layers 2 --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --epochs 200 --feature-norm row --runs 10
run appnp "$C" --model appnp --hidden 64 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --K 10 --alpha 0.1 --epochs 200 --feature-norm row --runs 10
run gcnii "$C" --model gcnii --layers 16 --hidden 64 --dropout 0.6 --lr 0.01 --weight-decay 5e-4 --wd-conv 0.01 --alpha 0.1 --theta 0.5 --epochs 1500 --patience 100 --select loss --feature-norm row --runs 10
if [ -d "$SHARED/datasets/facebook" ]; then
  [ -d "$W/fb.store" ] || "$B" ingest --format ogb "$SHARED/datasets/facebook" --out "$W/fb.store" >&2
  run fb_gcn "$W/fb.store" --model gcn --layers 2 --hidden 16 --epochs 200 --runs 10
  run fb_logreg "$W/fb.store" --model mlp --layers 1 --epochs 200 --runs 10
fi
