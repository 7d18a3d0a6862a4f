"""The stack above torch: flash-attn, xformers, bitsandbytes, DeepSpeed, vLLM and the others.

``check`` judges every installed one (``host.py`` asks the torch child, ``target/extensions.py``
answers, ``analysis.py`` and ``rules.py`` judge it against ``data/extensions.toml`` read by
``table.py``, ``render.py`` shows it); ``recommend --with`` plans a stack (``advise/stack.py``).
docs/stack.md explains each finding code (ED330-ED359).
"""
