"""``envdoctor fleet``: many nodes' reports merged, and the node that differs named.

- ``load``: files, folders and globs -> documents grouped by node (:class:`facts.NodeInput`);
- ``analysis``: one function per document kind turns a node's documents into comparable facts
  (:class:`facts.NodeFacts`);
- ``rules``: pure rules over all nodes: the majority of each fact, the nodes that deviate, slow
  GPUs, health counters; findings ED750-ED799 with the fix per node (``fixes``); a verdict per node;
- ``merge``: the whole pipeline, for files and for a gather;
- ``launcher``, ``nodelist``: the rendezvous from torchrun's, Slurm's and Open MPI's variables;
- ``host``: the host side of ``fleet --gather`` (the child is ``envdoctor/fleet/target/gather.py``);
- ``pairs``: the pairing schedule of a pairwise pass and the slowest-pair analysis;
- ``comms``: ``fleet --gather --comms``: rank 0's comms answer read, the pairs analysed, ED782-ED785;
- ``render``: text, Markdown and HTML; ``command``: the Click command.
"""
