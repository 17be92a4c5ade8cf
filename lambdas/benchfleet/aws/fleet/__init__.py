"""Targets on AWS: create, wait for, and remove hosts and databases (by id and by tag)."""
