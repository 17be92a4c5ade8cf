"""benchfleet.workload (docstring to be written)."""
