"""The one error type a user's own input raises (bad target, batch, model or loss).

Why its own type: the CLI prints it as one line and exits non-zero, with no traceback from the
harness, since nothing in the harness is wrong; every other exception is a harness defect and keeps
its traceback.
"""


class UserInputError(ValueError):
    """Something the user handed ``ortcheck check`` cannot be checked; the message says what and why."""
