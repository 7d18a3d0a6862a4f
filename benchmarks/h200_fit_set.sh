#!/usr/bin/env bash
# One set of fit's accuracy rows on the H200, each row in a fresh child, in one device call of at most
# 10 minutes (issue 28's held-out sets, the second to the fourth: docs/fit.md). From a copy of the tree with
# the machine's python3:
#
#   OUT=$OUT bash benchmarks/h200_fit_set.sh held-out-3
#
# Back: nvidia-smi.txt, <stem>/<stem>.json and .md (stem: fit-heldout2 for held-out-2, ...), log.txt.
# A held-out set's JSON is saved verbatim as docs/examples/h200/<stem>-DATE.json and never re-measured
# or tuned on.
set -u
SET=${1:?give the set: held-out-2, held-out-3, ...}
OUT=${OUT:?set OUT}
PY=${PYTHON:-python3}
PYPATH=$(command -v "$PY")
STEM=fit-heldout${SET#held-out-}
export PYTHONUNBUFFERED=1
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
LOG=$OUT/log.txt
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,memory.used,memory.free,ecc.mode.current,driver_version --format=csv
} > "$OUT/nvidia-smi.txt" 2>&1
"$PY" benchmarks/bench_fit_accuracy.py --set "$SET" --deadline "${HELDOUT_S:-560}" --python "$PYPATH" \
  --out "$OUT/${STEM#fit-}" >> "$LOG" 2>&1 || true
date -u >> "$LOG"
