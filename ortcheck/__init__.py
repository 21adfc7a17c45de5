"""ortcheck: conformance harness for ORTModule-style training pipelines.

``check_model`` and ``assert_trains_like_eager`` (:mod:`ortcheck.usercheck`) are imported on first
use, so ``import ortcheck.nested`` and the pytest plugin stay as light as before."""

_API = ("check_model", "assert_trains_like_eager", "UserInputError", "CheckResult")


def __getattr__(name: str):
    if name in _API:
        from ortcheck import usercheck

        return getattr(usercheck, name)
    raise AttributeError(f"module 'ortcheck' has no attribute {name!r}")


__all__ = list(_API)
