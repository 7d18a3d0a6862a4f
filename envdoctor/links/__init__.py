"""The links plugin: ``envdoctor topo`` (how the GPUs are connected) and ``envdoctor comms``
(collectives, GPU pairs and host copies measured through torch.distributed).

topo: ``probe`` (every GPU's PCIe, NVLink, NUMA and the path of each pair; check runs it too),
``analysis_topo`` (each path's expected peak), ``table`` (``data/links.toml``), ``rules_topo``
(ED840-ED869; check runs them too), ``render_topo``, ``command_topo``.
comms: ``plan`` (sizes, nccl-tests' bandwidth factors), ``host`` (running the ranks' children; who
starts them is ``envdoctor.launch``), ``analysis_comms`` (from their answers to a
:class:`envdoctor.links.facts_comms.CommsResult`), ``rules_comms`` (ED870-ED899), ``render_comms``,
``command_comms``. The rank's side is ``envdoctor/links/target/comms.py``.
"""
