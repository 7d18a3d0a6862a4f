#!/usr/bin/env bash
# check's own speed on the H200, in one device call (about 70 s):
#   1. check --skip torch, this tree against a baseline tree, alternating, 15 rounds, with where
#      the time goes (bench_check.py --skip-torch-only --breakdown --baseline);
#   2. collect_env, check --skip torch and the full check, alternating, 3 rounds;
#   3. one full `check -v` of each tree, kept whole (the findings and the libraries above torch).
#
#   cd NEW && OUT=/tmp/out BASE=../base bash benchmarks/h200_speed.sh
#
# Both trees are checkouts with their bytecode compiled first and PYTHONDONTWRITEBYTECODE unset,
# so neither pays for compiling its modules from source.
set -u
OUT=${OUT:-/tmp/envdoctor-speed}
BASE=${BASE:-../base}
PY=${PYTHON:-python3}
TARGET=$(command -v "$PY")
mkdir -p "$OUT"
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1
echo "machine: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader 2>&1 | head -1);" \
     "$("$PY" -V 2>&1) at $TARGET; $(nproc) CPUs"
echo "RDMA devices (/sys/class/infiniband): $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
"$PY" -c "import click, distro, packaging, pynvml; print('envdoctor deps: ok')"
"$PY" -m compileall -q envdoctor "$BASE/envdoctor" > /dev/null
echo "== 1. check --skip torch against $BASE"
"$PY" benchmarks/bench_check.py --python "$TARGET" --skip-torch-only --rounds "${ROUNDS:-15}" --breakdown \
  --baseline "$BASE" --json "$OUT/skip-torch.json"
echo "== 2. collect_env, check --skip torch, the full check"
"$PY" benchmarks/bench_check.py --python "$TARGET" --rounds "${FULL_ROUNDS:-3}" --json "$OUT/full.json"
echo "== 3. check -v, each tree once"
for tree in . "$BASE"; do
  name=$(basename "$(cd "$tree" && pwd)")
  t0=$(date +%s.%N)
  (cd "$tree" && "$PY" -m envdoctor check -v --python "$TARGET" > "$OUT/check-v-$name.txt" 2>&1)
  rc=$?
  awk -v n="$name" -v a="$t0" -v b="$(date +%s.%N)" -v r="$rc" 'BEGIN {printf "%-6s check -v  %6.2f s  rc=%s\n", n, b - a, r}'
done
