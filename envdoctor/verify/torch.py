"""Verify checks of torch in the target Python: ED706 no longer imports, ED707 no longer sees the
GPUs, ED708 the tiny op fails; ED722 what changed. Pure: a Pair in, outcomes out."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.codes import CODES
from envdoctor.findings import Finding
from envdoctor.verify.pair import NotCompared, Outcome, Pair, Same, skip_reason


def torch_works(pair: Pair) -> Iterator[Outcome]:
    """ED706 import, ED707 GPUs visible, ED708 tiny op; ED722 what changed."""
    reason = skip_reason(pair, "torch")
    if reason:
        yield NotCompared(reason)
        return
    before, after, rebooting = pair.before, pair.after, pair.rebooting
    bt, at = before.torch, after.torch
    evidence_py = []
    bp, ap = before.python.executable, after.python.executable
    if bp and ap and bp != ap:
        if after.python.chosen_by != "--python":  # another interpreter by accident: not like with like
            yield NotCompared(f"torch: the baseline inspected {bp}, now {ap} (pass --python to compare)")
            return
        evidence_py.append(f"the baseline inspected {bp}, now {ap}")
    was_ok = bt.installed and not bt.import_error and bt.error is None
    where = ap or "the target Python"
    evidence: list[str] = []
    if was_ok:
        title = None
        if at.error is not None:
            title = f"torch's check fails now in {where}"
            evidence = [at.error.message] + ([f"last step: {at.stage}"] if at.stage else [])
            if at.stderr_tail:
                evidence.append("stderr: " + at.stderr_tail.strip().splitlines()[-1])
        elif not at.installed:
            title = f"torch is no longer installed in {where}"
            evidence = [f"the baseline had torch {bt.version} ({bt.location or bp})"]
        elif at.import_error:
            title = "torch no longer imports"
            evidence = [at.import_error.strip().splitlines()[-1] if at.import_error.strip() else at.import_error]
        if title:
            yield Finding(
                "ED706",
                "error",
                title,
                evidence=tuple(evidence + evidence_py),
                fix=(
                    f"{ap or 'python3'} -c 'import torch; print(torch.__version__)'",
                    "envdoctor check   # the full diagnosis",
                ),
                area="torch",
            )
            return
    imports_now = at.installed and not at.import_error and at.error is None
    regressed = False
    if was_ok and imports_now and not rebooting:
        if bt.cuda_available and at.cuda_available is False:
            evidence = [f"torch {at.version}: torch.cuda.is_available() was True, is False now"]
            if at.cuda_error:
                evidence.append(at.cuda_error)
            evidence.extend(w for w in at.warnings[:2])
            yield Finding(
                "ED707",
                "error",
                "torch no longer sees the GPUs",
                evidence=tuple(evidence + evidence_py),
                fix=("nvidia-smi", "envdoctor check   # why CUDA does not start"),
                area="torch",
                explanation="A driver update without a reboot, a driver whose CUDA is older than torch's, "
                "or a container that lost its device nodes all end here: torch falls back to the CPU.",
            )
            regressed = True
        elif (
            bt.device_count and at.device_count is not None and at.cuda_available and at.device_count < bt.device_count
        ):
            yield Finding(
                "ED707",
                "error",
                f"torch sees fewer GPUs: {bt.device_count} -> {at.device_count}",
                evidence=tuple(
                    [f"CUDA_VISIBLE_DEVICES={after.driver.cuda_visible_devices!r}"]
                    if after.driver.cuda_visible_devices is not None
                    else []
                )
                + tuple(evidence_py),
                fix=("nvidia-smi -L",),
                area="torch",
            )
            regressed = True
        elif bt.tiny_op == "ok" and at.cuda_available and at.tiny_op != "ok":
            yield Finding(
                "ED708",
                "error",
                CODES["ED708"].title,
                evidence=(f"torch.ones(1, device='cuda') ... .item(): {at.tiny_op or 'did not finish'}",)
                + tuple(evidence_py),
                fix=("envdoctor check   # the full diagnosis", "sudo dmesg | grep -iE 'nvrm|xid' | tail -20"),
                area="torch",
                explanation="CUDA starts but a kernel cannot run: a driver too old for torch's CUDA, a GPU "
                "architecture the build lacks, or a GPU in an error state.",
            )
            regressed = True
    changes = []
    if bt.version != at.version:
        changes.append(f"torch {bt.version or 'not installed'} -> {at.version or 'not installed'}")
    # the build's CUDA, cuDNN and NCCL are known only where import torch finished (not from the metadata)
    built = bt.error is None and at.error is None and not bt.import_error and not at.import_error
    for label, x, y in (
        ("CUDA", bt.cuda, at.cuda),
        ("cuDNN", bt.cudnn_version, at.cudnn_version),
        ("NCCL", bt.nccl_version, at.nccl_version),
        ("torchvision", bt.torchvision, at.torchvision),
        ("torchaudio", bt.torchaudio, at.torchaudio),
    ):
        if label in ("CUDA", "cuDNN", "NCCL") and not built:
            continue
        if x != y and (x or y):
            changes.append(f"{label} {x or 'none'} -> {y or 'none'}")
    if not was_ok and imports_now and at.installed:
        baseline = bt.import_error or (bt.error.message if bt.error else "not installed")
        changes.append(f"torch imports now (baseline: {baseline})")
    if changes:
        yield Finding(
            "ED722", "info", "torch changed: " + changes[0], evidence=tuple(changes[1:] + evidence_py), area="torch"
        )
    elif not regressed and imports_now:
        gpu = ""
        if at.cuda_available and not rebooting:
            gpu = f", sees {at.device_count} GPU(s)" + (", tiny op ok" if at.tiny_op == "ok" else "")
        yield Same(f"torch {at.version}" + (f" (CUDA {at.cuda}{gpu})" if at.cuda else " (CPU build)"))
