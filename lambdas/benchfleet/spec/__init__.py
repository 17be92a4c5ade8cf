"""The comparison spec and its workload: what a user writes, validated before anything starts.

- ``model``: the models of a spec (targets, workload, storage, clusters, the rules between them),
  loading from YAML/JSON with errors naming the file and the field;
- ``variants``: how a target's server goes from one variant's settings to another's.

Lambda-light (pydantic). May import workload and cluster; nothing above it.
"""
