"""The install advisor: which route, torch and wheel, as exact commands. Pure; never runs them.

Import the module that holds what you need (this package imports nothing itself, so the torch
rules, which need only :mod:`~envdoctor.advise.choose`, do not load the route builders):

- choosing torch: ``choose`` (``choose_variant``, the entry point), ``request`` (the frozen
  ``Request``, ``--torch`` specifiers, the live index answer), ``fit`` (one variant on one machine),
  ``pick`` (one choice), ``waysout`` (what would make a better torch possible), ``drivers`` (the
  driver branch to install), ``macos_amd`` (machines without CUDA), ``choice`` (``Choice``,
  ``WayOut``, ``Rejected``);
- the machine: ``machine`` (``Machine``, ``Gpu``, facts -> machine), ``whatif`` (the what-if
  overrides and their parsers);
- the plan: ``recommend`` (the entry point), ``routes`` (system / conda / docker, with reasons),
  ``plan`` (``Plan``, ``Step``, ``Way``, ``Image``), ``steps`` (steps every route shares),
  ``system_route``, ``conda_route``, ``docker_route`` (each route's commands), ``image`` (the NGC image).
"""
