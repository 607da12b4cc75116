#!/usr/bin/env bash
# The README's flags reference, from the binary's own --help (tests/test_e2e_help.c checks the
# README holds exactly this between its flags markers). Usage: bash scripts/flags_reference.sh
# [path/to/inca]; paste the output over the README's section after a change to any --help.
set -euo pipefail
B=${1:-build/inca}
for c in ingest gen info verify partition train predict export shard prune bench; do
  printf '### `inca %s`\n\n```\n' "$c"
  "$B" "$c" --help
  printf '```\n\n'
done
