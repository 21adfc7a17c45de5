"""The export stage's one error type: the wrapper refuses with it (or falls back, if allowed)."""


class ExportError(RuntimeError):
    pass
