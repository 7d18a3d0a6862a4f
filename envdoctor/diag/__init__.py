"""``envdoctor diag``: one verdict per node in levels like DCGM's (docs/diag.md).

``host.run_diag`` composes check's inspection, topo, the live GPU state, the fabric, a tiny CUDA op
per GPU (level 1), bench, burn and comms (level 2), a long burn with a memory test, targeted power
and per-link verdicts (level 3); ``rules`` turns each into a test with its figure, threshold and
source; ``render`` prints them; ``command`` is the Click command.
"""
