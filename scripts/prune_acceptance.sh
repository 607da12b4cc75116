#!/usr/bin/env bash
# The pruning acceptance measurements (issue 5), as run for the report: Fashion-MNIST (1% labels,
# keep 10% / 30%, MLP target, 5 seeds; CCS, double-end, top-k beside random and full data) and
# Facebook (random 60/20/20 split, 1% of the training labels, keep 10% / 30%, GCN target).
# Usage: scripts/prune_acceptance.sh [INCA_BIN] [WORKDIR]. Each line prints text and a JSON line;
# the first line of each dataset trains the proxy and stores its dynamics in the store, the
# others rescore them (--reuse-dynamics). Heavy: about an hour on 2 busy cores.
set -euo pipefail
B=${1:-build/inca}
W=${2:-out/prune}
mkdir -p "$W"
FM=/usr/share/datasets/fashion-mnist
[ -d "$W/fmnist" ] || "$B" ingest --format idx "$FM" --out "$W/fmnist"
[ -d "$W/facebook" ] || "$B" ingest --format ogb ../shared/datasets/facebook --out "$W/facebook"

# whole prune run on 60000 images, time per stage
"$B" bench pruning "$W/fmnist" --labeled 0.01 --keep 0.1 --proxy-epochs 30 --threads 2

P="--labeled 0.01 --ssl labelprop --proxy-epochs 30 --seed 0 --threads 2"
T="--model mlp --hidden 64 --epochs 60 --dropout 0.2 --runs 5 --json"
"$B" prune "$W/fmnist" $P --score aum --select ccs --keep 0.1 --mis-ratio 0.3 --indices "$W/fm_ccs10.npy" \
  --out "$W/fmnist_ccs10" --overwrite
R="$P --reuse-dynamics $T --eval"
"$B" prune "$W/fmnist" $R --select ccs --keep 0.1 --mis-ratio 0.3 --eval-sets coreset,random
"$B" prune "$W/fmnist" $R --select ccs --keep 0.1 --mis-ratio 0.3 --balance --eval-sets coreset
"$B" prune "$W/fmnist" $R --select ccs --keep 0.1 --mis-ratio 0.1 --balance --eval-sets coreset
"$B" prune "$W/fmnist" $R --select ccs --keep 0.1 --mis-ratio 0 --balance --eval-sets coreset
"$B" prune "$W/fmnist" $R --select ccs --keep 0.3 --mis-ratio 0 --balance --eval-sets coreset
"$B" prune "$W/fmnist" $R --select double-end --keep 0.1 --mis-ratio 0.3 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --keep 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select ccs --keep 0.3 --mis-ratio 0.1 --balance --eval-sets coreset,random
"$B" prune "$W/fmnist" $R --select ccs --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select double-end --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select topk --keep 0.3 --eval-sets coreset
"$B" prune "$W/fmnist" $R --select random --keep 0.1 --eval-sets full --runs 2

G="--split random:0.6,0.2,0.2 --labeled 0.01 --seed 0 --proxy-hidden 16 --proxy-epochs 30 --proxy-dropout 0.5 \
   --model gcn --hidden 16 --epochs 100 --dropout 0.5 --runs 5 --threads 2 --json --eval"
"$B" prune "$W/facebook" $G --select ccs --keep 0.1 --mis-ratio 0.3 --eval-sets coreset,random,full
"$B" prune "$W/facebook" $G --reuse-dynamics --select ccs --keep 0.3 --mis-ratio 0.1 --eval-sets coreset,random
"$B" prune "$W/facebook" $G --reuse-dynamics --select double-end --keep 0.1 --mis-ratio 0.3 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select double-end --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select ccs --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G --reuse-dynamics --select ccs --keep 0.1 --mis-ratio 0.3 --balance --eval-sets coreset
# self-training pseudo-labels (GCN FixMatch/FlexMatch, dropout views only) instead of spreading
S="--ssl selftrain --noise 0 --ssl-epochs 100 --dyn-tag st"
"$B" prune "$W/facebook" $G $S --select ccs --keep 0.1 --mis-ratio 0.3 --eval-sets coreset
"$B" prune "$W/facebook" $G $S --reuse-dynamics --select ccs --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G $S --reuse-dynamics --select ccs --keep 0.1 --mis-ratio 0.1 --balance --eval-sets coreset
"$B" prune "$W/facebook" $G $S --reuse-dynamics --select double-end --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G $S --reuse-dynamics --score el2n --select ccs --keep 0.1 --mis-ratio 0.1 --eval-sets coreset
"$B" prune "$W/facebook" $G $S --reuse-dynamics --select ccs --keep 0.3 --mis-ratio 0.1 --eval-sets coreset
# self-training on Fashion-MNIST (pseudo-label accuracy and time only)
"$B" prune "$W/fmnist" --labeled 0.01 --ssl selftrain --ssl-epochs 30 --noise 0.2 --proxy-epochs 30 --seed 0 --threads 2 \
  --dyn-tag st --select ccs --keep 0.1 --mis-ratio 0.3 --balance --json
