"""The ``benchfleet`` command: argument parsing, what it prints, and its talks with a deployment.

- ``main``: the argument parser and dispatch, ``validate``, ``plan``, ``calibrate``, ``doctor``;
- ``running``: ``run`` and ``cancel``; ``reading``: ``runs``, ``results``, ``compare``, ``report``,
  ``import``; ``specs``: a spec file loaded and planned for a command; ``base``: exit codes, errors;
- ``ui`` and ``ui_cost``: the tables and live progress it draws (rich); ``doctor``: what would
  fail, found before anything is spent; ``remote``: the client of a deployed API.

The top of the dependency graph: may import everything; nothing imports it (the Lambdas never do).
"""
