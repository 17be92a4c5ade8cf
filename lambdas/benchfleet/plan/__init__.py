"""A spec becomes a plan: every target x repetition x step, its duration, its waves and its names.

- ``model``: the Plan (steps, durations, the cost estimate) both backends execute;
- ``agentjob``: the agent's job for one plan step (the only place a workload becomes tool options);
- ``waves``: repetitions scheduled within a region's caps; ``scale``: a spec's smoke scale;
- ``stripe``: what a target's data volumes can do as one array; ``naming``: names and tags of
  everything a run creates.

Lambda-light. May import spec, workload, cluster, cost.pricing and stats.cost; never local,
report or cli.
"""
