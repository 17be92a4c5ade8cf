"""benchfleet: benchmark MySQL-compatible databases with sysbench, locally or on AWS."""

__version__ = "0.1.0"
