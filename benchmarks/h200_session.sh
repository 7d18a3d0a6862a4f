#!/usr/bin/env bash
# One GPU session of the performance-and-health round, in stages that each fit one device call.
#
#   OUT=/tmp/out bash benchmarks/h200_session.sh record     # fixtures, check/topo/comms, check timing, bench suites
#   OUT=/tmp/out bash benchmarks/h200_session.sh burn       # 5 default burns (60 s) and their spread
#   OUT=/tmp/out bash benchmarks/h200_session.sh fit        # fit --measure accuracy over 26 configurations
#   OUT=/tmp/out bash benchmarks/h200_session.sh final      # check's start-up compiled, fleet --gather, plots
#   TINY=1 ...                                              # the same on a CPU machine, small (a dry run)
#
# Runs from a checkout with the machine's python3 (the one that holds torch; PYTHON overrides).
# Each stage writes $OUT/<stage>.tar.gz and $OUT/<stage>-summary.txt (at most 8 files come back).
set -u
STAGE=${1:?stage: record, burn, fit or final}
OUT=${OUT:-/tmp/envdoctor-session}
W=$OUT/$STAGE
mkdir -p "$W"
PY=${PYTHON:-python3}
PYPATH=$(command -v "$PY")
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
export PYTHONUNBUFFERED=1
ED="$PY -m envdoctor"
SUMMARY=$OUT/$STAGE-summary.txt
if [ -n "${TINY:-}" ]; then ROUNDS=3; else ROUNDS=20; fi
: > "$SUMMARY"
# envdoctor's own dependencies, carried as wheels in .whl/ where the machine lacks them (distro)
if ! "$PY" -c "import click, packaging, distro, requests, pynvml" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/envdoctor-site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/envdoctor-site"
fi

rec() {  # rec FILE CMD...: the command line, its output, and its exit status, as in tests/fixtures
  local file=$1; shift
  { echo "\$ $*"; "$@" 2>&1; echo "[rc=$?]"; } > "$file"
}
timed() {  # timed NAME CMD...: wall time of a step into the summary
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  awk -v n="$name" -v a="$t0" -v b="$(date +%s.%N)" -v r="$rc" 'BEGIN {printf "%-28s %7.1f s  rc=%s\n", n, b - a, r}' >> "$SUMMARY"
}
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader 2>&1
  "$PY" -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])" 2>&1; } >> "$SUMMARY"

case "$STAGE" in
record)
  mkdir -p "$W/raw" "$W/docs"
  timed record_nvml "$PY" benchmarks/record_nvml.py > "$W/raw/nvml.json" 2> "$W/raw/nvml.err"
  "$PY" -m envdoctor.child torch_probe.py > /tmp/torch_probe_program.py
  rec "$W/raw/torch-child.txt" "$PY" /tmp/torch_probe_program.py "{}"
  rec "$W/raw/torch-child-no-visible-gpu.txt" env CUDA_VISIBLE_DEVICES= "$PY" /tmp/torch_probe_program.py "{}"
  rec "$W/raw/nvidia-smi-topo.txt" nvidia-smi topo -m
  rec "$W/raw/nvidia-smi-query.txt" nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap,memory.total,pci.bus_id,serial,power.limit,clocks.max.sm --format=csv
  rec "$W/raw/sysfs-link.txt" bash -c 'for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor 2>/dev/null)" = 0x10de ] && for f in current_link_speed max_link_speed current_link_width max_link_width numa_node local_cpulist; do echo "$d/$f: $(cat $d/$f 2>&1)"; done; done'
  rec "$W/raw/fabric.txt" "$PY" -c "import ctypes,pynvml as p;p.nvmlInit();h=p.nvmlDeviceGetHandleByIndex(0);i=p.c_nvmlGpuFabricInfoV_t();p.nvmlDeviceGetGpuFabricInfoV(h,ctypes.byref(i));print(i.state,i.status,i.cliqueId,hex(i.healthMask))"
  timed check rec "$W/docs/check.txt" $ED check
  rec "$W/docs/check.json" $ED check --json
  rec "$W/docs/check-v.txt" $ED check -v
  rec "$W/docs/check.md" $ED check --markdown --redact
  timed topo rec "$W/docs/topo.txt" $ED topo
  rec "$W/docs/topo.json" $ED topo --json
  timed comms rec "$W/docs/comms.txt" $ED comms
  rec "$W/docs/comms.json" $ED comms --json
  timed bench_comms rec "$W/docs/bench-comms.txt" "$PY" benchmarks/bench_comms.py --python "$PYPATH" --out "$W/comms"
  if [ -f .device/base-390b2f0.tar.gz ]; then
    mkdir -p /tmp/base && tar -xzf .device/base-390b2f0.tar.gz -C /tmp/base
    BASE="--baseline /tmp/base"
  else
    BASE=""
  fi
  timed bench_check rec "$W/docs/bench-check.txt" "$PY" benchmarks/bench_check.py --skip-torch-only \
      --rounds "$ROUNDS" --breakdown --python "$PYPATH" $BASE --json "$W/docs/bench-check.json"
  timed bench_table rec "$W/docs/bench-table.txt" "$PY" benchmarks/bench_table.py --rounds 15
  # what is done so far comes back even if the long step below runs past the call's limit
  tar -C "$OUT" -czf "$OUT/$STAGE-a.tar.gz" "$STAGE"
  if [ -n "${TINY:-}" ]; then
    timed bench_suites rec "$W/docs/bench-suites.txt" "$PY" benchmarks/bench_suites.py --tiny --out "$W/suites"
  else
    timed bench_suites rec "$W/docs/bench-suites.txt" "$PY" benchmarks/bench_suites.py --default-run --out "$W/suites"
  fi
  tail -n 40 "$W/docs/bench-suites.txt" >> "$SUMMARY"
  tail -n 12 "$W/docs/bench-check.txt" >> "$SUMMARY"
  ;;
burn)
  if [ -n "${TINY:-}" ]; then
    timed bench_burn rec "$W/bench-burn.txt" "$PY" benchmarks/bench_burn.py --runs 2 --seconds 5 --python "$PYPATH" --out "$W/runs"
  else
    timed bench_burn rec "$W/bench-burn.txt" "$PY" benchmarks/bench_burn.py --runs 5 --seconds 60 --python "$PYPATH" --out "$W/runs"
  fi
  tail -n 40 "$W/bench-burn.txt" >> "$SUMMARY"
  ;;
fit)
  if [ -n "${TINY:-}" ]; then
    timed fit_accuracy rec "$W/bench-fit.txt" "$PY" benchmarks/bench_fit_accuracy.py --cpu --python "$PYPATH" --out "$W/fit"
  else
    timed fit_accuracy rec "$W/bench-fit.txt" "$PY" benchmarks/bench_fit_accuracy.py --deadline "${FIT_DEADLINE:-470}" --python "$PYPATH" --out "$W/fit"
  fi
  tail -n 45 "$W/bench-fit.txt" >> "$SUMMARY"
  ;;
final)
  # check's start-up again, compiled as an installed package is (the image sets PYTHONDONTWRITEBYTECODE=1,
  # so a checkout on PYTHONPATH is compiled again on every run; pip compiles at install)
  if [ -f .device/base-390b2f0.tar.gz ]; then
    mkdir -p /tmp/base && tar -xzf .device/base-390b2f0.tar.gz -C /tmp/base
    "$PY" -m compileall -q /tmp/base/envdoctor >/dev/null 2>&1
    BASE="--baseline /tmp/base"
  else
    BASE=""
  fi
  "$PY" -m compileall -q envdoctor >/dev/null 2>&1
  timed bench_check rec "$W/bench-check.txt" "$PY" benchmarks/bench_check.py --skip-torch-only \
      --rounds "$ROUNDS" --breakdown --python "$PYPATH" $BASE --json "$W/bench-check.json"
  tail -n 18 "$W/bench-check.txt" >> "$SUMMARY"
  timed fleet_gather rec "$W/fleet.txt" "$PY" -m torch.distributed.run --standalone --nproc-per-node 1 -m envdoctor fleet --gather --bench --json
  timed burn_plot rec "$W/burn-plot.txt" $ED burn --seconds 10 --plot "$W/burn.png"
  timed bench_plot rec "$W/bench-plot.txt" $ED bench --suite matmul,memory --plot "$W/bench.png"
  if [ -n "${QUICK_SUITES:-}" ]; then
    timed bench_suites_quick rec "$W/bench-suites-quick.txt" "$PY" benchmarks/bench_suites.py --quick ${TINY:+--tiny} --out "$W/suites"
    tail -n 30 "$W/bench-suites-quick.txt" >> "$SUMMARY"
  fi
  ;;
*)
  echo "unknown stage $STAGE (record, burn, fit, final)" >&2; exit 2;;
esac

tar -C "$OUT" -czf "$OUT/$STAGE.tar.gz" "$STAGE" && rm -rf "$W"
cat "$SUMMARY"
