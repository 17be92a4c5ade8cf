"""The cloud backend: what the Lambdas of the deployed state machines and API do, over boto3.

- ``planning``: a run request becomes the state machine's input (caps, waves, the control plane's
  own cost, parameter groups, the history bound);
- ``fleet``: targets created, tagged, checked and torn down (EC2, RDS, Aurora, clusters), the janitor;
- ``steps``: agent jobs sent with SSM Run Command, their callbacks, collect and CloudWatch metrics;
- ``store``: results written to Timestream or Athena and read back;
- ``api_service``: what the REST API does; ``settings``, ``regions``, ``clients``, ``errors``,
  ``events``: the deployment's environment, where it may act, and its failures.

Clients are always injected (tests pass moto's or a Stubber's). Lambda-light: may import spec, plan,
cost, cluster, workload and stats; never local, report or cli.
"""
