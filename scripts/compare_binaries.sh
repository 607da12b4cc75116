#!/usr/bin/env bash
# Two builds of inca on the same training commands (issue 26: a refactoring must not change a
# bit): the --metrics lines and the result line of each, compared without their timing, memory
# and version fields (prune: its result line, the per-stage seconds left out).  usage: bash scripts/compare_binaries.sh OLD_INCA NEW_INCA [STORE]
# (STORE: Cora, default out/cora.lmdb from scripts/setup.sh). NEW_ARGS="..." adds flags to the
# new binary's train commands (e.g. a changed default set back: NEW_ARGS="--refresh-relax 0.3").
# CMDS_FILE=F: the commands from F instead (one per line, without "inca"; "#" starts a comment;
# $VARS expanded from the environment, e.g. G_100k=/tmp/g100k). TRAIN_ARGS="...": flags added at
# the end of both binaries' train commands (e.g. "--epochs 3" to compare the first epochs of a
# long run: the same code path as the whole run). NEW_ARGS apply to train commands only and go
# before the command's own flags. Exit 1 when any command differs.
set -uo pipefail
OLD=$1; NEW=$2; C=${3:-out/cora.lmdb}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmds=(
"train $C --model gcn --method full --epochs 30 --feature-norm row --seed 0"
"train $C --model gcn --method incagg --parts 40 --batch-parts 10 --epochs 30 --feature-norm row --seed 1"
"train $C --model sage --method gas --parts 20 --batch-parts 5 --epochs 20 --seed 2"
"train $C --model gcnii --layers 4 --method cluster --parts 20 --batch-parts 5 --epochs 20 --seed 3"
"train $C --model appnp --method incagg --refresh-source push --parts 20 --batch-parts 5 --epochs 20 --seed 4"
"train $C --model mlp --method full --epochs 20 --batch-size 64 --seed 5"
"train $C --model gcn --method full --epochs 20 --workers 2 --seed 6"
"train $C --model gcn --method incagg --parts 20 --batch-parts 5 --epochs 10 --workers 2 --seed 7"
"train $C --model gcn --method incagg --parts 20 --batch-parts 5 --epochs 10 --loader view --seed 8"
"train $C --model gcn --method full --epochs 10 --runs 3 --seed 9"
"train $C --model gcn --method incagg --history-dtype bf16 --parts 20 --batch-parts 5 --epochs 10 --seed 10"
"prune $C --labeled 0.2 --keep 0.3 --split random:0.6,0.2,0.2:0 --eval --epochs 30 --proxy-epochs 10"
"prune $C --labeled 0.2 --keep 0.3 --proxy-method incagg --proxy-model sage --proxy-epochs 5 --eval --model gcn --method gas --epochs 10"
)
if [ -n "${CMDS_FILE:-}" ]; then
  cmds=()
  while IFS= read -r line; do
    line=${line%%#*}; line=$(eval echo "$line")
    [ -n "${line// }" ] && cmds+=("$line")
  done < "$CMDS_FILE"
fi
fail=0
for cmd in "${cmds[@]}"; do
  sub=${cmd%% *}; rest=${cmd#* }
  for b in old new; do
    bin=$OLD; extra=""
    # NEW_ARGS go first, so that a flag the command gives itself wins (the last one counts)
    if [ $b = new ]; then bin=$NEW; [ "$sub" = train ] && extra="${NEW_ARGS:-}"; fi
    metrics=""; tail_args=""
    [ "$sub" = train ] && metrics="--metrics $tmp/m.jsonl" && tail_args="${TRAIN_ARGS:-}"   # prune has no metrics
    # shellcheck disable=SC2086
    "$bin" $sub $extra $rest $tail_args --threads 2 --quiet --json $metrics > "$tmp/$b.json" 2> "$tmp/$b.err" ||
      echo "exit $? ($b): $cmd: $(tail -1 "$tmp/$b.err")"
    mv "$tmp/m.jsonl" "$tmp/$b.jsonl" 2>/dev/null || : > "$tmp/$b.jsonl"
  done
  python3 - "$tmp" "$cmd" <<'PY' || fail=1
import json, sys
t, cmd = sys.argv[1], sys.argv[2]
skip = lambda k: k in ('config', 'seconds') or k.endswith('_s') or any(w in k for w in ('time', 'rss', 'wait', 'version'))
def load(p): return [{k: v for k, v in json.loads(l).items() if not skip(k)} for l in open(p) if l.strip()]
a = load(t + '/old.jsonl') + load(t + '/old.json')
b = load(t + '/new.jsonl') + load(t + '/new.json')
same = a == b and len(a) > 0
print(('same      ' if same else 'DIFFERENT ') + '%3d lines  ' % len(a) + cmd)
sys.exit(0 if same else 1)
PY
done
exit $fail
