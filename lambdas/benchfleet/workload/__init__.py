"""What runs on a database server and what it prints: the benchmark tools and the server's settings.

- ``sysbench`` and ``gotpc``: each tool's command builder and its one output parser;
- ``mysqlcnf``: the cnf of a server for an engine and a memory size; ``serverparams``: which
  settings change at run time and which a parameter group may set; ``serverstatus``: the status
  counters sampled every second;
- ``records``: the rows read from the agent's JSON lines; ``validation``: whether those rows are a
  measurement of their plan step (local runs, cloud collect and imports alike).

``sysbench``, ``gotpc``, ``mysqlcnf`` and ``serverstatus`` are shipped to the hosts next to the
agent (standard library only, Python 3.8), so this file stays a docstring: importing the package
runs nothing. ``serverparams`` (the catalogue's file), ``records`` and ``validation`` may import spec
and stats; nothing here imports plan, cost, local, report, cli or aws.
"""
