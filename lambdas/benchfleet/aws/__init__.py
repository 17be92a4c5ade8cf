"""boto3 adapters; clients are always injected."""
