"""Local mode: MariaDB servers on this machine, the local runner and the DuckDB store."""
