#!/usr/bin/env bash
# Pruning at scale (issue 15), as run for the README and the note. Usage:
# scripts/prune_scale.sh [INCA_BIN] [WORKDIR] [PARTS...]; PARTS: any of curve table big-table
# big-graph pseudo relabel cs (default all; about an hour and a half on 2 cores). Every command prints its JSON lines; /usr/bin/time -v gives the wall
# time and peak memory of the timed runs. Fashion-MNIST from Debian's dataset-fashion-mnist.
set -euo pipefail
B=${1:-build/inca}
W=${2:-out/scale}
shift $(( $# < 2 ? $# : 2 ))   # BIN alone: the default parts (shift 2 of one argument shifted nothing)
PARTS=${*:-curve table big-table big-graph pseudo relabel cs}
mkdir -p "$W"
FM=${INCA_FMNIST:-/usr/share/datasets/fashion-mnist}
T="/usr/bin/time -v"
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }

if has curve; then   # Fashion-MNIST, 1% labels, the budget curve, 5 target seeds, table defaults
  [ -d "$W/fmnist" ] || "$B" ingest --format idx "$FM" --out "$W/fmnist" --quiet
  "$B" prune "$W/fmnist" --labeled 0.01 --seed 0 --threads 2 --keep 0.01,0.02,0.05,0.1,0.3 --mis-ratio 0.1 --balance \
    --eval --runs 5 --eval-sets coreset,random,full --eval-budget epochs --json --quiet
  # the same with SGC then Correct and Smooth (--ssl cs, its view by the check): pseudo-labels 84.2%
  "$B" prune "$W/fmnist" --labeled 0.01 --seed 0 --threads 2 --ssl cs --keep 0.01,0.02,0.05,0.1,0.3 --mis-ratio 0.1 \
    --balance --eval --runs 5 --eval-sets coreset --eval-budget epochs --no-save-dynamics --json --quiet
fi
if has table; then   # a new table with every flag at its default: 26 classes, 16 features, 16000 rows
  "$B" gen --kind csbm --nodes 16000 --avg-degree 0 --features 16 --classes 26 --mean-scale 2.5 --seed 7 \
    --out "$W/t26" --force --quiet
  for eb in epochs steps; do
    "$B" prune "$W/t26" --labeled 0.01 --keep 0.05,0.1,0.3 --eval --runs 5 --eval-budget $eb --json --quiet
  done
fi
if has big-table; then   # a pool of 1M rows (a Gaussian mixture: csbm without edges), FAISS kNN
  [ -d "$W/t1m" ] || "$B" gen --kind csbm --nodes 1250000 --avg-degree 0 --features 64 --classes 10 --mean-scale 2 \
    --split random:0.8,0.1,0.1 --seed 3 --out "$W/t1m" --quiet
  "$B" bench knn "$W/t1m" --max-rows 200000 --threads 2 --json --quiet   # FAISS's recall on 200k of the rows
  $T "$B" prune "$W/t1m" --labeled 0.01 --knn-search faiss --keep 0.1 --out "$W/t1m_keep10" --overwrite \
    --indices "$W/t1m_keep10.npy" --threads 2 --json --quiet
fi
if has big-graph; then   # 1M nodes, degree 20, 128 features; IncAgg proxy and IncAgg target
  [ -d "$W/g1m" ] || "$B" gen --kind csbm --nodes 1000000 --avg-degree 20 --features 128 --classes 8 --homophily 0.4 \
    --seed 0 --out "$W/g1m" --quiet
  M="--proxy-method incagg --proxy-parts 256 --proxy-batch-parts 32 --proxy-hidden 64 --proxy-epochs 10"
  E="--eval --method incagg --parts 256 --batch-parts 32 --hidden 64 --epochs 20 --runs 3 --threads 2 --json --quiet"
  # --ssl auto (default): spreading or SGC over the graph, or the proxy trained on the labels, by 5-fold check
  $T "$B" prune "$W/g1m" --labeled 0.01 $M --keep 0.1 --out "$W/g1m_keep10" --overwrite --threads 2 --json --quiet
  "$B" prune "$W/g1m" --labeled 0.01 $M --keep 0.1 --reuse-dynamics $E --eval-sets coreset,random
  for x in "--mis-ratio 0.1 --balance" "--mis-ratio 0.3 --balance" "--score el2n --mis-ratio 0.1 --balance" \
           "--score forgetting --mis-ratio 0.1 --balance" "--score cartography --mis-ratio 0.1 --balance"; do
    "$B" prune "$W/g1m" --labeled 0.01 $M --keep 0.1 $x --reuse-dynamics $E --eval-sets coreset
  done
  # the earlier pseudo-labellers, for comparison: spreading alone, self-training
  "$B" prune "$W/g1m" --labeled 0.01 $M --ssl labelprop --keep 0.1 --dyn-tag lp $E --eval-sets coreset
  "$B" prune "$W/g1m" --labeled 0.01 $M --ssl selftrain --ssl-epochs 50 --noise 0 --keep 0.1 --dyn-tag st $E --eval-sets coreset
  # SGC then Correct and Smooth over this heterophilous graph (pseudo-labels only)
  "$B" prune "$W/g1m" --labeled 0.01 $M --ssl cs --keep 0.1 --no-save-dynamics --threads 2 --json --quiet
fi
if has pseudo; then   # Fashion-MNIST's pseudo-labels: spreading and SGC over each kNN view alone, the check's pick, relabelling, C&S
  [ -d "$W/fmnist" ] || "$B" ingest --format idx "$FM" --out "$W/fmnist" --quiet
  for v in "--ssl labelprop --knn-features raw" "--ssl labelprop --knn-features whiten" \
           "--ssl labelprop --knn-features sqrt-whiten" "--ssl sgc --knn-features raw" "--ssl sgc --knn-features whiten" \
           "--ssl sgc --knn-features sqrt-whiten" "--ssl proxy" "--ssl auto" "--ssl auto --relabel 1" "--ssl cs"; do
    "$B" prune "$W/fmnist" --labeled 0.01 --seed 0 --threads 2 --keep 0.1 $v --no-save-dynamics --json --quiet
  done
  for s in 1 2; do   # two more labelled draws: the default, SGC and C&S over square roots whitened
    for v in "--ssl auto" "--ssl sgc --knn-features sqrt-whiten" "--ssl cs"; do
      "$B" prune "$W/fmnist" --labeled 0.01 --seed $s --threads 2 --keep 0.1 $v --no-save-dynamics --json --quiet
    done
  done
fi
if has relabel; then   # pseudo-labels on Fashion-MNIST with proxy relabelling rounds
  [ -d "$W/fmnist" ] || "$B" ingest --format idx "$FM" --out "$W/fmnist" --quiet
  for r in "--relabel 0" "--relabel 1 --relabel-confident 1" "--relabel 2 --relabel-confident 1" \
           "--relabel 1 --relabel-confident 0.5" "--relabel 1 --relabel-confident 0.3" "--relabel 1 --relabel-confident 0.7"; do
    "$B" prune "$W/fmnist" --labeled 0.01 --seed 0 --threads 2 --keep 0.1 --mis-ratio 0.1 --balance $r --no-save-dynamics \
      --json --quiet
  done
fi
if has cs; then   # SGC alone vs SGC then Correct and Smooth, 3 labelled draws each: why --ssl auto leaves C&S out
  D=${INCA_DATASETS:-../shared/datasets}
  for d in cora facebook; do [ -d "$W/$d" ] || "$B" ingest --format ogb "$D/$d" --out "$W/$d" --quiet; done
  [ -d "$W/t26" ] || "$B" gen --kind csbm --nodes 16000 --avg-degree 0 --features 16 --classes 26 --mean-scale 2.5 --seed 7 \
    --out "$W/t26" --quiet
  [ -d "$W/t10" ] || "$B" gen --kind csbm --nodes 20000 --avg-degree 0 --features 32 --classes 10 --mean-scale 1.5 --seed 11 \
    --out "$W/t10" --quiet
  R="--split random:0.6,0.2,0.2:0"
  for c in "$W/cora --labeled 0.2 $R" "$W/cora --labeled 0.05 $R" "$W/facebook --labeled 0.2 $R" "$W/facebook --labeled 0.05 $R" \
           "$W/cora --graph knn --knn-features raw --labeled 0.05 $R" "$W/facebook --graph knn --knn-features raw --labeled 0.05 $R" \
           "$W/t26 --knn-features raw --labeled 0.01" "$W/t10 --knn-features raw --labeled 0.01"; do
    for s in 0 1 2; do
      for m in sgc cs; do   # the pseudo-labels only: a one-epoch proxy, nothing saved
        "$B" prune $c --seed $s --keep 0.3 --ssl $m --proxy-epochs 1 --no-save-dynamics --threads 2 --json --quiet
      done
    done
  done
fi
