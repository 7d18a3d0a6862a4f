"""``envdoctor profile``: where the time of the user's own training (or inference) step goes.

The user's script runs unchanged in the target interpreter under ``target/bootstrap.py`` (torch's
profiler over a few steps, the host syncs counted at the user's own lines); ``host.py`` runs it
through the child transport, ``analysis.py`` turns the Chrome trace into the breakdown (pure),
``rules.py`` the findings, ``render.py`` the text and the ``envdoctor.profile/1`` document.
"""
