#!/usr/bin/env bash
# Issue 28's third held-out set (docs/fit.md, "Third held-out set"): each row in a fresh child, in
# one device call of at most 10 minutes. Run from a copy of the tree with the machine's python3:
#
#   OUT=$OUT bash benchmarks/h200_fit_heldout3.sh
#
# Back: nvidia-smi.txt, heldout3/fit-heldout3.json and .md, log.txt. Save heldout3/fit-heldout3.json
# verbatim as docs/examples/h200/fit-heldout3-2026-12-01.json and never re-measure or tune on it.
set -u
OUT=${OUT:?set OUT}
PY=${PYTHON:-python3}
PYPATH=$(command -v "$PY")
export PYTHONUNBUFFERED=1
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
LOG=$OUT/log.txt
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,memory.used,memory.free,ecc.mode.current,driver_version --format=csv
} > "$OUT/nvidia-smi.txt" 2>&1
"$PY" benchmarks/bench_fit_accuracy.py --set held-out-3 --deadline "${HELDOUT_S:-560}" --python "$PYPATH" \
  --out "$OUT/heldout3" >> "$LOG" 2>&1 || true
date -u >> "$LOG"
