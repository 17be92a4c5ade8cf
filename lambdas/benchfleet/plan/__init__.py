"""benchfleet.plan.model (docstring to be written)."""
