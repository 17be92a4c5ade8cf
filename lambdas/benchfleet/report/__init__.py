"""Self-contained HTML report of a run: one file, Plotly inlined, opens with no network.

The answer first (``summary``: one sentence per comparison), then the figures per thread count
(``charts``), every second (``timecharts``), two runs side by side (``pair``), all from the store's
rows (``data``) and laid out by ``html`` (``write_report``). Reads the store through stats; the
Lambdas never import it (Plotly is here). This file stays a docstring: the command imports
``summary`` for the terminal's sentences without loading Plotly or DuckDB.
"""
