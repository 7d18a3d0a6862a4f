"""Redaction does work linear in the text: ``fleet --redact`` joined every prefix of a dotted word
(a title of 40,000 dots took 13.7 s, 1 MB of version text past 60 s). Bounded by CPU time, generous
(the quadratic forms take 10-1000 times longer)."""

from __future__ import annotations

import time

from envdoctor.fleet.merge import NodeRedactor
from envdoctor.redact import mask_text

BOUND = 2.0  # CPU seconds, for work that takes about 0.1 s on the shared 2-core machine


def cpu(fn, *args):
    started = time.process_time()
    out = fn(*args)
    took = time.process_time() - started
    assert took < BOUND, took
    return out


def redactor():
    return NodeRedactor(
        ["/home/ana"], {"gpu-07": "node-01", "gpu-07.cluster.local": "node-02", "ana": "<user>", "a.b.c": "<serial>"}
    )


def test_fleet_redact_of_a_title_of_forty_thousand_dots_is_linear():
    title = "a." * 40000 + "b"
    assert cpu(redactor().text, title) == title
    assert cpu(redactor().text, "gpu-07." * 40000) == "node-01." + "gpu-07." * 39999
    assert cpu(redactor().text, "x." * 40000) == "x." * 40000


def test_fleet_redact_of_a_megabyte_of_dotted_version_text_is_linear():
    text = ".".join(str(i % 10) for i in range(500_000))  # 1 MB, one token of 500,000 parts
    assert cpu(redactor().text, text) == text
    assert cpu(mask_text, text) == text


def test_fleet_redact_still_replaces_the_longest_word_before_a_dot():
    r = redactor()
    assert (
        r.text("gpu-07.json gpu-07.cluster.local.x gpu-070 ana.b a.b.c.d a.b")
        == "node-01.json node-02.x gpu-070 <user>.b <serial>.d a.b"
    )


def test_masking_a_megabyte_of_at_signs_and_colons_is_linear():
    assert cpu(mask_text, "a:b@" * 250_000).count("***") == 249_999  # the last @ has no host after it
    assert cpu(mask_text, " a:" * 300_000 + "b@h").endswith(" a:***@h")
