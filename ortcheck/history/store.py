"""The history file: SQLite through ``sqlite3``, its schema versioned with ``PRAGMA user_version``.

One row per run (its environment as the report recorded it) and one per verdict; a run is keyed by
the digest of its ``summary.json``, so ingesting it twice is a no-op. Writers take the database's
write lock for the whole run (``BEGIN IMMEDIATE``, waiting up to a minute), so shards and machines
ingesting into one file at once neither lose nor duplicate anything. A file of a newer schema, or
one that is not a history, is refused with one line and left as it was.
"""
from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Iterator

VERSION = 3
_SCHEMA = """  -- version 1, which the migrations below bring to VERSION
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,       -- sha256 of the summary.json the run came from
    source TEXT NOT NULL,              -- the report folder, as given
    finished TEXT,                     -- when the run ended (ISO 8601, UTC), from its report
    ingested TEXT NOT NULL,
    impl TEXT, device TEXT, machine TEXT, torch TEXT, python TEXT, commit_id TEXT,
    hypothesis_seed INTEGER, profile TEXT,
    environment TEXT NOT NULL          -- the report's whole environment, JSON
);
CREATE TABLE verdicts (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    property TEXT NOT NULL, impl TEXT NOT NULL,
    status TEXT NOT NULL,              -- pass, refused, fail, error, expected-fail, xpass, skip, n/a
    reason TEXT NOT NULL,              -- the first line of the verdict's detail
    PRIMARY KEY (run_id, property, impl)
);
CREATE TABLE convergence (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    test TEXT NOT NULL, status TEXT NOT NULL,
    data TEXT NOT NULL                 -- the report's entry (parity, golden deviation...), JSON
);
CREATE INDEX verdicts_by_property ON verdicts (property, impl);
"""
_MIGRATIONS: dict[int, str] = {  # from version k to k + 1
    # a numeric finding's error over the oracle's bound (NULL: not numeric, or ingested before version 2)
    1: "ALTER TABLE verdicts ADD COLUMN factor REAL",
    # benchmark figures a report folder held (bench/*.json: step-time ratio to eager, first step, kernels)
    2: """CREATE TABLE benchmarks (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        bench TEXT NOT NULL, impl TEXT NOT NULL, figure TEXT NOT NULL, value REAL NOT NULL,
        PRIMARY KEY (run_id, bench, impl, figure))""",
}


class HistoryError(ValueError):
    """One line for the user: the file or the report is not what it should be; nothing was written."""


@contextlib.contextmanager
def opened(path: Path, create: bool = True) -> Iterator[sqlite3.Connection]:
    """The history at ``path``, created or migrated to :data:`VERSION` (refused: newer, or not a history)."""
    if not create and not Path(path).is_file():
        raise HistoryError(f"{path}: no history there (ingest a report first: ortcheck history ingest)")
    if Path(path).is_file() and not _looks_like_sqlite(Path(path)):
        raise HistoryError(f"{path}: not a history file (not an SQLite database)")
    connection = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        _upgrade(connection, path)
        yield connection
    except sqlite3.DatabaseError as error:
        raise HistoryError(f"{path}: {error}") from None
    finally:
        connection.close()


def _looks_like_sqlite(path: Path) -> bool:
    with open(path, "rb") as file:
        head = file.read(16)
    return head == b"SQLite format 3\x00" or head == b""


def _upgrade(connection: sqlite3.Connection, path: Path) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version > VERSION:
            raise HistoryError(f"{path}: history schema version {version}, newer than this ortcheck's "
                               f"{VERSION}: update ortcheck")
        if version == 0 and tables:
            raise HistoryError(f"{path}: an SQLite file that is not an ortcheck history (tables: {', '.join(sorted(tables))})")
        if version == 0:  # statement by statement: executescript would commit mid-transaction
            for statement in filter(str.strip, _SCHEMA.split(";")):
                connection.execute(statement)
        for step in range(max(version, 1), VERSION):
            for statement in filter(str.strip, _MIGRATIONS[step].split(";")):
                connection.execute(statement)
        connection.execute(f"PRAGMA user_version = {VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the database's write lock from its start (BEGIN IMMEDIATE)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
