"""One folder per test run where its processes keep the convergence oracle's curves.

Every implementation's cell of a convergence case trains the same oracle runs; ``ortcheck.convergence
.oracle_runs`` keeps each run's curve per process, and in a folder when given one. Under xdist the
controller makes the folder, names it to every worker and removes it at the end, so the cells of a
case share the oracle's runs whichever workers they land on. It lives and dies with the run: nothing
is kept between runs, where the code or the machine may have changed.
"""
from __future__ import annotations

from ortcheck.convergence import oracle_runs
from ortcheck.pytest_plugin import timebound
from ortcheck.pytest_plugin.run_folder import RunFolder, given_to

FOLDER_KEY = "ortcheck_oracle_runs"


def configure(config) -> None:
    """The controller registers the folder's owner; a worker shares its folder; pytest alone keeps
    the curves in its own memory."""
    if timebound.is_xdist_controller(config):
        config.pluginmanager.register(RunFolder(FOLDER_KEY, "ortcheck-oracle-runs-"), "ortcheck-oracle-runs-folder")
        return
    oracle_runs.share_in(given_to(config, FOLDER_KEY))
