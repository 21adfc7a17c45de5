"""Gradient rules, one op type per ``op_<optype>.py`` module; importing this package registers them all."""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
