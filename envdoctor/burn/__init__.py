"""``envdoctor burn``: sustained load that proves every GPU healthy, not just fast for a second.

``host`` starts one child per GPU (``envdoctor/burn/target/burn.py``) and watches NVML meanwhile;
``collect`` reads what a child reported; ``analysis`` computes the figures; ``rules`` gives the
verdict (finding codes ED800-ED829); ``chart`` draws the terminal time series; ``facts``
the document's types, ``render`` its text, ``command`` the Click command.
"""
