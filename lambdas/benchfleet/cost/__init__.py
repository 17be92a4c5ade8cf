"""benchfleet.cost (docstring to be written)."""
