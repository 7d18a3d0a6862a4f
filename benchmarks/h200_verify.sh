#!/usr/bin/env bash
# snapshot / verify on a real GPU machine (issue 8), run from the checkout with PYTHONPATH=.
#
#   1. envdoctor snapshot --bench                    -> exit 0, the snapshot saved
#   2. envdoctor verify --bench (text, then --json)  -> exit 0: nothing regressed
#   3. the snapshot edited to driver 570.133.20 / CUDA 12.8 and every bench point 1.5x faster;
#      envdoctor verify --baseline EDITED --bench    -> exit 1: ED720 "570.133.20 -> <driver>",
#      ED712 for the bench points (now slower than the edited baseline)
#
#   OUT=/tmp/out bash benchmarks/h200_verify.sh      # the device tool sets OUT; PYTHON=... picks python
#
# Writes at most 8 files under $OUT (snapshot.txt, snapshot.json, verify-same.txt/.json,
# baseline-older-faster.json, verify-edited.txt/.json, summary.txt) and exits 0 when every step
# behaved as above, 1 otherwise. The snapshots go to a temporary state folder, never to ~.
set -u
: "${OUT:?set OUT to a folder for the outputs}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
cd "$(dirname "$0")/.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
# envdoctor's own dependencies (click, packaging, distro, nvidia-ml-py): wheels in .whl/ when missing
if ! "$PY" -c "import click, packaging, distro" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/envdoctor-site .whl/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/envdoctor-site"
fi
STATE="$(mktemp -d)"
export ENVDOCTOR_STATE_DIR="$STATE"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
failed=0
ed() { "$PY" -m envdoctor "$@"; }
expect() {  # expect NAME WANTED GOT
  if [ "$2" = "$3" ]; then echo "ok    $1: exit $3" >>"$SUMMARY"; else echo "FAIL  $1: exit $3, wanted $2" >>"$SUMMARY"; failed=1; fi
}

{ nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader; "$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'; } >>"$SUMMARY" 2>&1

# 1. the snapshot
ed snapshot --bench >"$OUT/snapshot.txt" 2>&1; rc=$?
expect "snapshot --bench" 0 "$rc"
ed snapshot --list >>"$OUT/snapshot.txt" 2>&1
SNAP="$STATE/snapshots/$(cat "$STATE/snapshots/latest" 2>/dev/null)"
cp "$SNAP" "$OUT/snapshot.json" 2>/dev/null || { echo "FAIL  no snapshot file" >>"$SUMMARY"; failed=1; }

# 2. verify against it: nothing regressed
ed verify --bench >"$OUT/verify-same.txt" 2>&1; rc=$?
expect "verify --bench (same machine, text)" 0 "$rc"
ed verify --bench --json >"$OUT/verify-same.json" 2>>"$OUT/verify-same.txt"; rc=$?
expect "verify --bench --json (same machine)" 0 "$rc"

# 3. a baseline from "before the upgrade": older driver, faster bench
"$PY" - "$SNAP" "$OUT/baseline-older-faster.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
d = doc["facts"]["driver"]
for key in ("kernel_module_version", "userspace_version", "driver_version"):
    if d.get(key):
        d[key] = "570.133.20"
d["driver_cuda"] = "12.8"
for p in (doc.get("bench") or {}).get("points", []):
    for key in ("tflops", "burst_tflops", "best_tflops"):
        if p.get(key):
            p[key] = round(p[key] * 1.5, 3)
doc["snapshot"]["note"] = "edited by benchmarks/h200_verify.sh: driver 570.133.20 / CUDA 12.8, bench x1.5"
json.dump(doc, open(sys.argv[2], "w"), indent=2)
EOF
ed verify --baseline "$OUT/baseline-older-faster.json" --bench >"$OUT/verify-edited.txt" 2>&1; rc=$?
expect "verify --bench against the edited baseline (text)" 1 "$rc"
ed verify --baseline "$OUT/baseline-older-faster.json" --bench --json >"$OUT/verify-edited.json" \
  2>>"$OUT/verify-edited.txt"; rc=$?
expect "verify --bench --json against the edited baseline" 1 "$rc"

# what the JSON results say
"$PY" - "$OUT/verify-same.json" "$OUT/verify-edited.json" >>"$SUMMARY" 2>&1 <<'EOF'
import json, sys
ok = True
def load(p):
    try:
        return json.load(open(p))
    except Exception as exc:
        print(f"FAIL  {p}: {exc}"); return None
same, edited = load(sys.argv[1]), load(sys.argv[2])
if same:
    codes = [f["code"] for f in same["regressions"]]
    print(("ok   " if not codes else "FAIL ") + f" same machine: regressions {codes}, changes {[f['code'] for f in same['changes']]}")
    ok &= not codes
    print("      unchanged:", "; ".join(same["unchanged"]))
if edited:
    reg = [f["code"] for f in edited["regressions"]]
    drv = [f["title"] for f in edited["changes"] if f["code"] == "ED720"]
    good = bool(drv) and drv[0].startswith("Driver 570.133.20 -> ") and "ED712" in reg and set(reg) <= {"ED712"}
    ok &= good
    print(("ok   " if good else "FAIL ") + f" edited baseline: {drv}, regressions {reg}")
    for f in edited["regressions"][:4]:
        print("      ", f["title"], "|", "; ".join(f["evidence"]))
sys.exit(0 if ok else 1)
EOF
[ $? -eq 0 ] || failed=1
rm -rf "$STATE"
echo "result: $([ $failed -eq 0 ] && echo PASS || echo FAIL)" >>"$SUMMARY"
cat "$SUMMARY"
exit $failed
