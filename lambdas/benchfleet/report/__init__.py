"""Self-contained HTML report."""
