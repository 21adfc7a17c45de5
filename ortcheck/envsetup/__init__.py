"""One-off, idempotent preparation of a pinned environment (docs/architecture.md, "Environments").

Each module here is runnable (``python -m ortcheck.envsetup.<env>``) and is safe to run before
every test session: it checks first and only does work that is missing.
"""
