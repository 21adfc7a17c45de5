"""Nightly history: every run's report kept in one SQLite file, and what changed since the last
comparable run (docs/history.md). ``store`` owns the file and its schema, ``ingest`` reads report
folders into it, ``events`` compares runs, ``command`` is ``ortcheck history``."""
