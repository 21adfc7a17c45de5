"""Convergence gates: train a case under eager and an implementation, compare the curves.

``cases`` (what is trained) -> ``runner`` (seeded runs from identical weights and batches) ->
``gate`` (the tolerance model) -> ``golden`` (recorded curves, atomic updates) -> ``plots``.
"""
