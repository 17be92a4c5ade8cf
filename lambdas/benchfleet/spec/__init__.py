"""The comparison spec and its workload: what a user writes, validated before anything starts.

A spec names targets x a workload x repetitions; its parts each have a module:

- ``documents``: reading a YAML/JSON document within limits, errors naming the file and field;
- ``fields``: the patterns and the strict base model every part shares, the option rules;
- ``workload``, ``targets`` (one model per kind), ``storage``, ``variants``: the parts;
- ``comparison``: the spec itself (ComparisonSpec) and the checks it makes on its own;
- ``settings``: the cnf and options a target's server runs with for a variant;
- ``switching``: how a server goes from one variant's settings to another's;
- ``rules``: the checks across a resolved spec (files on disk, tools, variants, clusters);
- ``loading``: load, parse and resolve into a LoadedSpec; the published JSON schema.

Lambda-light (pydantic). May import workload and cluster; nothing above it (plan, cost, stats,
local, report, cli, aws import the spec, never the reverse).
"""
