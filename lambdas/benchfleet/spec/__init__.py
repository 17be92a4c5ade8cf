"""benchfleet.spec.model (docstring to be written)."""
