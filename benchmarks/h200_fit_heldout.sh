#!/usr/bin/env bash
# Issue 28's one device call: the usable memory of the H200, then the held-out set (docs/fit.md,
# "Held-out set"), each row in a fresh child, then in-sample extras for tuning (the custom loop and
# expandable_segments on configurations of the in-sample set). About 9 minutes; run from a copy
# of the tree with the machine's python3:
#
#   OUT=$OUT bash benchmarks/h200_fit_heldout.sh
#
# Back (6 files): usable.json, nvidia-smi.txt, heldout/fit-heldout.json and .md, extras/fit-accuracy.json,
# log.txt. Save heldout/fit-heldout.json verbatim as docs/examples/h200/fit-heldout-2026-12-01.json and
# never re-measure or tune on it.
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
  nvidia-smi --query-gpu=memory.reserved --format=csv || true
} > "$OUT/nvidia-smi.txt" 2>&1
"$PY" benchmarks/usable_memory.py > "$OUT/usable.json" 2>>"$LOG"
echo "usable: rc=$?" >> "$LOG"
"$PY" benchmarks/bench_fit_accuracy.py --set held-out --deadline "${HELDOUT_S:-440}" --python "$PYPATH" \
  --out "$OUT/heldout" 2>&1 | tee -a "$LOG" | grep -v '^|' || true
rm -f "$OUT/heldout/fit-heldout.md.tmp"
"$PY" benchmarks/bench_fit_accuracy.py --set extras --deadline "${EXTRAS_S:-80}" --python "$PYPATH" \
  --out "$OUT/extras" 2>&1 | tee -a "$LOG" | grep -v '^|' || true
rm -f "$OUT/extras/fit-accuracy.md"
date -u >> "$LOG"
