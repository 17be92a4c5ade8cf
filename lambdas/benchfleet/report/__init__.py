"""Self-contained HTML report of a run: one file, Plotly inlined, opens with no network."""

from benchfleet.report.html import render_report, write_report

__all__ = ["render_report", "write_report"]
