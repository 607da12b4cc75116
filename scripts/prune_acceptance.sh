#!/usr/bin/env bash
# The pruning acceptance measurements (issue 5), as run for the report: Fashion-MNIST (1% labels,
# keep 10% / 30%, MLP target, 5 seeds; CCS, double-end, top-k beside random and full data) and
# Facebook (random 60/20/20 split, 1% of the training labels, keep 10% / 30%, GCN target).
# Usage: scripts/prune_acceptance.sh [INCA_BIN] [WORKDIR]. Each line prints text and a JSON line;
# the first line of each dataset trains the proxy and stores its dynamics in the store, the
# others rescore them (--reuse-dynamics). About 10 minutes on 2 idle cores.
set -euo pipefail
B=${1:-build/inca}
W=${2:-out/prune}
mkdir -p "$W"
FM=${INCA_FMNIST:-/usr/share/datasets/fashion-mnist}
[ -d "$W/fmnist" ] || "$B" ingest --format idx "$FM" --out "$W/fmnist"
SHARED=${INCA_SHARED:-$(cd "$(dirname "$0")/.." && pwd)/../shared}   # not the caller's folder's ../shared
[ -d "$W/facebook" ] || "$B" ingest --format ogb "$SHARED/datasets/facebook" --out "$W/facebook"

# whole prune run on 60000 images, time per stage
"$B" bench pruning "$W/fmnist" --labeled 0.01 --ssl labelprop --knn-features raw --keep 0.1 --feature-norm standard --proxy-epochs 20 --proxy-batch-size 128 \
  --proxy-lr 0.001 --mis-ratio 0.1 --balance --threads 2

# Fashion-MNIST: standardised pixels, spreading alpha 0.9 on the 10-NN cosine graph, MLP proxy
# and target trained with mini-batches of 128 (Adam 1e-3, 20 epochs; full data reaches ~88%)
P="--labeled 0.01 --ssl labelprop --knn-features raw --alpha 0.9 --feature-norm standard --proxy-epochs 20 --proxy-batch-size 128 \
   --proxy-lr 0.001 --seed 0 --threads 2"
T="--model mlp --hidden 256 --epochs 20 --batch-size 128 --lr 0.001 --dropout 0.2 --runs 5 --json --eval"
"$B" prune "$W/fmnist" $P $T --score aum --select ccs --keep 0.1 --mis-ratio 0.1 --balance --indices "$W/fm_ccs10.npy" \
  --out "$W/fmnist_ccs10" --overwrite --eval-sets coreset,random,full
R="$P --reuse-dynamics $T"
"$B" prune "$W/fmnist" $R --select double-end --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --topk hard --keep 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --topk easy --keep 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select ccs --keep 0.3 --mis-ratio 0.1 --balance --eval-sets coreset,random
"$B" prune "$W/fmnist" $R --select double-end --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --topk hard --keep 0.3 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --topk easy --keep 0.3 --eval-sets coreset

# Facebook: spreading over the graph (alpha 0.9), GCN proxy 64 hidden x 100 epochs, GCN target
G0="--split random:0.6,0.2,0.2 --labeled 0.01 --seed 0 --proxy-hidden 64 --proxy-epochs 100 \
   --proxy-dropout 0.5 --model gcn --hidden 16 --epochs 100 --dropout 0.5 --runs 5 --threads 2 --json --eval"
G="$G0 --ssl labelprop --alpha 0.9"
"$B" prune "$W/facebook" $G --select ccs --keep 0.1 --mis-ratio 0.1 --eval-sets coreset,random,full
"$B" prune "$W/facebook" $G --reuse-dynamics --select ccs --keep 0.3 --mis-ratio 0.1 --eval-sets coreset,random
"$B" prune "$W/facebook" $G --reuse-dynamics --select double-end --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select double-end --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select topk --topk hard --keep 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select topk --topk easy --keep 0.3 --eval-sets coreset
# self-training pseudo-labels instead of spreading (pseudo-label accuracy and time)
"$B" prune "$W/facebook" $G0 --ssl selftrain --noise 0 --ssl-epochs 100 --dyn-tag st --select ccs --keep 0.1 \
  --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" --labeled 0.01 --ssl selftrain --ssl-epochs 30 --noise 0.2 --proxy-epochs 30 --seed 0 --threads 2 \
  --dyn-tag st --select ccs --keep 0.1 --mis-ratio 0.1 --balance --json
