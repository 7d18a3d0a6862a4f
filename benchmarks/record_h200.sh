#!/usr/bin/env bash
# Record envdoctor's real outputs and raw tool outputs on a GPU machine, in one go.
#
#   OUT=/tmp/out bash benchmarks/record_h200.sh [quick]
#
# Runs from a checkout (PYTHONPATH=.) with the machine's python3 (the one that holds torch).
# Everything lands in $OUT/record.tar.gz (plus $OUT/summary.txt): raw tool output for
# tests/fixtures/, envdoctor check/recommend/index/verify outputs for docs/, and the timing
# benchmark of check against torch.utils.collect_env.
set -u
OUT=${OUT:-/tmp/envdoctor-record}
R=$OUT/record
mkdir -p "$R/raw" "$R/docs"
PY=${PYTHON:-python3}
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
ED="$PY -m envdoctor"
# envdoctor's own dependencies, carried as wheels in .whl/ where the machine lacks them (distro)
if ! "$PY" -c "import click, packaging, distro, requests" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/envdoctor-site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/envdoctor-site"
fi

rec() {  # rec FILE CMD...: the command line, its output, and its exit status, as in tests/fixtures
  local file=$1; shift
  { echo "\$ $*"; "$@" 2>&1; echo "[rc=$?]"; } > "$file"
}

# --- raw tool output (fixtures) ---
rec "$R/raw/nvidia-smi-query-nounits.txt" nvidia-smi --query-gpu=index,name,uuid,driver_version,compute_cap,memory.total,pci.bus_id,serial,power.limit,clocks.max.sm --format=csv,nounits
rec "$R/raw/nvidia-smi-version.txt" nvidia-smi --version
rec "$R/raw/proc-modules-nvidia.txt" bash -c 'grep -E "^(nvidia|nouveau)" /proc/modules'
rec "$R/raw/dev-nvidia.txt" bash -c 'ls -1 /dev | grep -E "^nvidia"'
rec "$R/raw/libnvidia-ml.txt" bash -c 'for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do ls -l $d/libnvidia-ml.so* 2>/dev/null; done'
rec "$R/raw/pci-ids-files.txt" bash -c 'ls -l /usr/share/misc/pci.ids /usr/share/hwdata/pci.ids /usr/share/pci.ids 2>&1'
rec "$R/raw/sys-firmware.txt" bash -c 'ls /sys/firmware; ls /sys/firmware/efi 2>&1 | head -3'
# the NVIDIA PCI devices as sysfs files, for a file-root fixture
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat "$d/vendor" 2>/dev/null)" = "0x10de" ]; then
    dst="$R/raw/sysfs/$(basename "$d")"; mkdir -p "$dst"
    for f in vendor device class subsystem_vendor subsystem_device revision; do cat "$d/$f" > "$dst/$f" 2>/dev/null; done
    readlink "$d/driver" > "$dst/driver.link" 2>/dev/null
  fi
done
"$PY" -m envdoctor.child torch_probe.py > /tmp/torch_probe_program.py
rec "$R/raw/torch-child.txt" "$PY" /tmp/torch_probe_program.py "{}"

# --- envdoctor itself ---
start=$(date +%s.%N)
rec "$R/docs/check.txt" $ED check
end=$(date +%s.%N)
awk "BEGIN {print \"check wall: \" $end - $start \" s\"}" >> "$OUT/summary.txt"
rec "$R/docs/check.json" $ED check --json
rec "$R/docs/check.md" $ED check --markdown --redact
rec "$R/docs/check-skip-torch.txt" $ED check --skip torch
for route in system conda docker; do
  rec "$R/docs/recommend-$route.txt" $ED recommend --route "$route" --offline
done
rec "$R/docs/recommend.txt" $ED recommend --offline
rec "$R/docs/recommend.json" $ED recommend --offline --json
rec "$R/docs/index-offline.txt" $ED index cu126 cu128 cu130 --offline
rec "$R/docs/table-gpu.txt" $ED table gpu "NVIDIA H200"

if [ "${1:-}" != "quick" ]; then
  rec "$R/docs/bench-check.txt" "$PY" benchmarks/bench_check.py --rounds 5 --python "$(command -v $PY)" \
      --envdoctor "$PY -m envdoctor" --json "$R/docs/bench-check.json"
  if [ -f benchmarks/h200_verify.sh ]; then
    OUT=$R/verify bash benchmarks/h200_verify.sh > "$R/docs/verify-session.txt" 2>&1
    echo "[rc=$?]" >> "$R/docs/verify-session.txt"
  fi
fi

tail -n 5 "$R/docs/check.txt" >> "$OUT/summary.txt"
cat "$R/docs/bench-check.txt" >> "$OUT/summary.txt" 2>/dev/null
tar -C "$OUT" -czf "$OUT/record.tar.gz" record && rm -rf "$R"
cat "$OUT/summary.txt"
