"""The Glue tables of the Athena record store, made in moto from cdk/lib/sql/glue-tables.json, the file
the CDK app's athena-store.ts reads: one table per record kind, partitioned by run_id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GLUE_TABLES: dict[str, list[list[str]]] = json.loads(
    (Path(__file__).resolve().parents[1] / "cdk" / "lib" / "sql" / "glue-tables.json").read_text())["tables"]


def create_glue_tables(glue: Any, database: str, bucket: str) -> None:
    """The store's database and its tables, their data under s3://<bucket>/tables/<table>/."""
    glue.create_database(DatabaseInput={"Name": database})
    for table, columns in GLUE_TABLES.items():
        glue.create_table(DatabaseName=database, TableInput={
            "Name": table, "PartitionKeys": [{"Name": "run_id", "Type": "string"}],
            "StorageDescriptor": {"Columns": [{"Name": n, "Type": t} for n, t in columns],
                                  "Location": f"s3://{bucket}/tables/{table}/"}})
