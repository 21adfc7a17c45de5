"""Repository root: the ortcheck plugin arrives through its pytest11 entry point once installed.

Running from a plain checkout (not installed) still works: load the plugin from the source tree.
``pytester`` serves the harness's own tests of the plugin (tests/harness).
"""
import importlib.metadata

_installed = any(ep.value == "ortcheck.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
pytest_plugins = ["pytester"] + ([] if _installed else ["ortcheck.pytest_plugin"])
