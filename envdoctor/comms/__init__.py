"""``envdoctor comms``: collectives, GPU pairs and host copies measured through torch.distributed.

``plan`` (sizes, nccl-tests' bandwidth factors), ``launch`` (who starts the ranks, their
environment), ``host`` (running the ranks' children), ``result`` (from their answers to a
:class:`envdoctor.facts.comms.CommsResult`). The rank's side is ``envdoctor/child/comms.py``.
"""
