"""Models written the way people write them (not from a model library), as ``ortcheck check`` targets.

Each module holds one model: ``build()`` returns it, ``batch(size)`` one call's inputs as the
user's training loop would pass them, ``loss(outputs)`` where the model does not return a scalar's
parts directly. ``ortcheck check tests.usercheck.models.small_resnet:build`` checks one;
tests/usercheck/test_user_models.py checks them all.
"""
