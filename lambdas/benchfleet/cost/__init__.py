"""Cost: where a price is decided and what a run may cost.

- ``pricing``: a target's price lines under every pricing model, from the dated tables in
  ``workloads/pricing``; ``price_list``: rebuilds those tables from the AWS Price List API.
- ``catalogue``: what exists on AWS (instance types, classes, engines, storage rules), checked
  before anything starts; ``catalogue_refresh``: rebuilds its recordings (``python -m``).
- ``ceiling``: the deployment's cost rules, applied by the Plan Lambda and the API;
- ``run_prices``: what the targets of a stored run cost per hour, for its cost tables.

Lambda-light (standard library, boto3 only where AWS is asked). May import spec, plan and
workload; never local, report or cli. Cost per 1,000 tps of measured results is stats.cost; the
tables the CLI prints are cli.ui_cost.
"""
