"""benchfleet.cli.main (docstring to be written)."""
