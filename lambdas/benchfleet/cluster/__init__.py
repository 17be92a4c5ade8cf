"""benchfleet.cluster (docstring to be written)."""
