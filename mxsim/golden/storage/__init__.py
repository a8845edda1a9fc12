"""Suites on disk: reading and writing hex columns, manifests, verification, merging shards, streams."""
