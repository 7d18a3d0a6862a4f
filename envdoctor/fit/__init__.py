"""``envdoctor fit``: will a model fit on these GPUs, and, with ``--measure``, how far off the estimate was.

The estimate: ``config``, ``models``, ``resolve`` (a config.json or a bundled shape ->
``spec.ModelSpec``), ``params``, ``activations``, ``estimate`` (pure, by phase and term), ``verdict``.
``--measure``: ``childconfig`` (what the child is sent), ``host`` (runs
``envdoctor/fit/target/measure.py``), ``facts`` (the typed measurement), ``analysis`` (the estimate
beside it, its error and the MFU), ``rules`` (ED630-ED699). ``render`` and ``command`` as every plugin.
"""
