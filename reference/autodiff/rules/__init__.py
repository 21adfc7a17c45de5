"""Gradient rules, one op type per ``op_<optype>.py`` module (ops sharing one rule: ``zero_gradient.py``, ``non_differentiable.py``); importing this package registers them all."""
import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
