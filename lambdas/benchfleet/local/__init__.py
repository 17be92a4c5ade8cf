"""Local mode: the same pipeline on this machine, with no AWS account.

MariaDB servers (one, or a Galera cluster behind a proxy) started under this user's data dir
(``mariadb``, ``galera``), or an existing server measured as it is (``existing``); the runner that
walks a plan and runs the agent per step (``runner``, with its ``watchdog``, ``preflight`` checks,
variant ``switching`` and the machine lock); the DuckDB store every result is read from (``store``),
filled by runs, by ``import`` of existing sysbench logs (``importer``) and by a cloud run's raw
output (``rawsync``); ``calibration`` of the plan's local estimates.

May import every domain package and DuckDB; the Lambdas never import it.
"""
