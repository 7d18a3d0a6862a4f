"""GPU model names as every table compares them (gpus.toml, health.toml, links.toml): one rule.

Kept apart from ``model.py`` so the small tables (health, links) use it without loading the big one.
"""

from __future__ import annotations

_PREFIXES = ("nvidia ", "geforce ", "tesla ")


def norm_gpu_name(name: str) -> str:
    """``"NVIDIA GeForce RTX 3090 Ti"`` -> ``"rtx 3090 ti"``; ``"A100-SXM4-80GB"`` -> ``"a100 sxm4 80gb"``.

    >>> norm_gpu_name("NVIDIA_H200"), norm_gpu_name("H200")
    ('h200', 'h200')
    """
    s = " ".join(name.lower().replace("-", " ").replace("_", " ").split())
    changed = True
    while changed:
        changed = False
        for p in _PREFIXES:
            if s.startswith(p):
                s, changed = s[len(p) :], True
    return s
