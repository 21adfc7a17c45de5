"""A folder the xdist controller shares with its workers for one run: made when the run starts,
named to each worker in its ``workerinput``, removed when the run ends."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


class RunFolder:
    """A pytest plugin object for the xdist controller; ``folder`` is the shared folder."""

    def __init__(self, key: str, prefix: str):
        self.key = key
        self.folder = Path(tempfile.mkdtemp(prefix=prefix))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        node.workerinput[self.key] = str(self.folder)

    def pytest_unconfigure(self, config) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def given_to(config, key: str) -> Path | None:
    """The folder the controller named under ``key`` to this worker; None outside xdist's workers."""
    folder = getattr(config, "workerinput", {}).get(key)
    return Path(folder) if folder else None
