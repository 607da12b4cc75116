#!/usr/bin/env bash
# The cost curve from 1M to 10M nodes (issue 28): gen -> METIS -> ParMETIS -> layout -> one IncAgg
# epoch per size, one JSON line per size and stage. See scripts/scale_curve.py --help; e.g.
#   bash scripts/scale_curve.sh --out /tmp/curve --sizes 1000000,2000000,5000000,10000000
#   python3 scripts/plot.py scale /tmp/curve/curve.jsonl
set -euo pipefail
exec python3 "$(dirname "$0")/scale_curve.py" "$@"
