#!/usr/bin/env bash
# envdoctor diag on a GPU machine: levels 1, 2 and 3 with the wall time of each, and NVML's answers
# to the live-state reads (processes, MIG instances, applications clocks, retired pages) as a
# recording for tests/fixtures. One device call: about 6 minutes on one H200.
#
#   OUT=/tmp/out bash benchmarks/h200_diag.sh        # seven files in $OUT (a device call returns at most 8)
#   LEVELS="1 2" ...                                 # fewer levels
#
# Runs from a checkout with the machine's python3 (the one that holds torch; PYTHON overrides).
set -u
OUT=${OUT:-/tmp/envdoctor-diag}
W=$OUT
mkdir -p "$W"
PY=${PYTHON:-python3}
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
export PYTHONUNBUFFERED=1
SUMMARY=$OUT/diag-summary.txt
: > "$SUMMARY"
if ! "$PY" -c "import click, packaging, distro, requests, pynvml" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/envdoctor-site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/envdoctor-site"
fi
{ echo "\$ nvidia-smi"; nvidia-smi 2>&1; echo "[rc=$?]"; } > "$W/nvidia-smi.txt"
for L in ${LEVELS:-1 2 3}; do
  t0=$(date +%s.%N)
  echo "\$ envdoctor diag -r $L --json" >> "$W/diag-stderr.txt"
  "$PY" -m envdoctor diag -r "$L" --json > "$W/diag-r$L.json" 2> >(tee -a "$W/diag-stderr.txt" >&2)
  rc=$?
  sleep 0.2
  awk -v l="$L" -v a="$t0" -v b="$(date +%s.%N)" -v r="$rc" \
    'BEGIN {printf "diag -r %s  %7.1f s  rc=%s\n", l, b - a, r}' | tee -a "$SUMMARY"
  tail -n 3 "$W/diag-stderr.txt" | grep '^verdict:' | tee -a "$SUMMARY"
done
# the live-state calls, answered as pynvml answers them (tests/fakenvml.py's recording format)
"$PY" - > "$W/nvml-state.json" 2>&1 <<'PYEOF'
import json
import pynvml as nv

def ask(fn, *args):
    try:
        value = getattr(nv, fn)(*args)
    except nv.NVMLError as exc:
        return {"error": int(exc.value)}
    if isinstance(value, list):
        return [{"pid": int(p.pid), "usedGpuMemory": p.usedGpuMemory} if hasattr(p, "pid") else value for p in value]
    return value

nv.nvmlInit()
gpus = []
for i in range(nv.nvmlDeviceGetCount()):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    u = ask("nvmlDeviceGetUtilizationRates", h)
    gpus.append({
        "nvmlDeviceGetComputeRunningProcesses": ask("nvmlDeviceGetComputeRunningProcesses", h),
        "nvmlDeviceGetGraphicsRunningProcesses": ask("nvmlDeviceGetGraphicsRunningProcesses", h),
        "nvmlDeviceGetRetiredPagesPendingStatus": ask("nvmlDeviceGetRetiredPagesPendingStatus", h),
        "nvmlDeviceGetMaxMigDeviceCount": ask("nvmlDeviceGetMaxMigDeviceCount", h),
        "nvmlDeviceGetApplicationsClock:1": ask("nvmlDeviceGetApplicationsClock", h, nv.NVML_CLOCK_SM),
        "nvmlDeviceGetApplicationsClock:2": ask("nvmlDeviceGetApplicationsClock", h, nv.NVML_CLOCK_MEM),
        "nvmlDeviceGetDefaultApplicationsClock:1": ask("nvmlDeviceGetDefaultApplicationsClock", h, nv.NVML_CLOCK_SM),
        "nvmlDeviceGetDefaultApplicationsClock:2": ask("nvmlDeviceGetDefaultApplicationsClock", h, nv.NVML_CLOCK_MEM),
        "nvmlDeviceGetUtilizationRates": u if isinstance(u, dict) else {"gpu": int(u.gpu), "memory": int(u.memory)},
    })
nv.nvmlShutdown()
print(json.dumps({"gpus": gpus}, indent=1, default=str))
PYEOF
{ echo "\$ ls /sys/class/infiniband"; ls /sys/class/infiniband 2>&1; echo "\$ grep -E 'peermem|ib_core' /proc/modules";
  grep -E 'peermem|ib_core' /proc/modules; echo "[rc=$?]"; } > "$W/fabric-files.txt" 2>&1
