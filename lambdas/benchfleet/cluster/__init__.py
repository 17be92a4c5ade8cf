"""Clusters (``kind: cluster``): a Galera cluster behind a proxy, one definition for both backends.

- ``galera``: what a node's configuration holds and when a cluster is healthy;
- ``proxyconf``: the HAProxy / ProxySQL configuration in front of it;
- ``jobs``: the agent jobs of a cloud cluster target (the contract with workloads/agent's
  benchfleet_cluster.py).

``galera`` and ``proxyconf`` are shipped to the hosts next to the agent (standard library only,
Python 3.8), so this file stays a docstring: importing the package runs nothing. The local cluster
is local.galera; the cloud one's provisioning aws.fleet.cluster. Imports only the standard library
and workload.serverstatus (the counters a node's job samples).
"""
