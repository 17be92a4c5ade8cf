"""Where results go: the results store (Timestream or S3 + Athena) and the run's summary."""
