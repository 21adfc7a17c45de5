"""What a recorded failure looks like: an exception type and/or a pattern over its first line.

A strict expected failure that fails for *another* reason (a harness bug, a new defect of the
implementation, a flake) must not pass as the recorded finding: on the GPU a CPU-kernel finding once
hid a harness bug that way. Each manifest entry says ``raises`` (exception class names, matched
against the class and its bases, plain or module-qualified; ``"crash"`` for a process that died: an
xdist worker, or the child a test recorded as crashing runs in) and/or
``match`` (a regular expression searched in the failure's first line: the exception's message
without its type). A group of exceptions (hypothesis reporting several) matches when every member does.
"""
from __future__ import annotations

import dataclasses
import re

FAILURE_PROPERTY = "ortcheck_failure"  # a failed test's (exception type, first line) among its report's user properties
CRASH = "crash"  # the pseudo-type of a process that died (xdist reports the crashed worker's test)
_FLOAT = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")  # numbers that vary with seeds and CPUs
_NUMERIC = re.compile(r"error (\d[-+.\de]*) > bound (\d[-+.\de]*)")  # the float64 oracle's verdict


def numeric_factor(line: str) -> float | None:
    """Error over bound of an oracle failure's first line ("implementation error E > bound B"): by how
    much a numeric finding fails (None: not a numeric failure)."""
    match = _NUMERIC.search(line or "")
    return float(match[1]) / float(match[2]) if match and float(match[2]) > 0 else None


class ProcessDied(Exception):
    """The process running a test died (a signal, an exit) or was killed hung: ``raises = "crash"``."""


def kind(error: BaseException) -> str:
    """The failure's type as reports and drafts name it: :data:`CRASH` for a process that died."""
    return CRASH if isinstance(error, ProcessDied) else type(error).__name__


@dataclasses.dataclass(frozen=True)
class FailurePattern:
    raises: tuple[str, ...] = ()
    match: str | None = None

    @classmethod
    def parse(cls, entry: dict) -> "FailurePattern":
        """From a manifest entry's ``raises`` (a name or a list) and ``match``; ValueError naming the field."""
        raises = entry.get("raises", [])
        raises = [raises] if isinstance(raises, str) else raises
        if not isinstance(raises, list) or not all(isinstance(r, str) and r.strip() for r in raises):
            raise ValueError("raises must be an exception class name or a list of them")
        match = entry.get("match")
        if match is not None:
            if not isinstance(match, str) or not match.strip():
                raise ValueError("match must be a non-empty regular expression")
            try:
                re.compile(match)
            except re.error as error:
                raise ValueError(f"match is not a regular expression: {error}") from None
        if not raises and match is None:
            raise ValueError("say what the failure looks like: raises (exception type) and/or match (a regex over "
                             "its first line); --collect-findings drafts both")
        return cls(tuple(r.strip() for r in raises), match)

    def accepts(self, error: BaseException) -> bool:
        leaves = list(_leaves(error))
        return all(self._accepts_one(leaf) for leaf in leaves)

    def accepts_crash(self) -> bool:
        return CRASH in self.raises

    def _accepts_one(self, error: BaseException) -> bool:
        names = type_names(error)
        if self.raises and not names & set(self.raises):
            return False
        return self.match is None or re.search(self.match, first_line(error)) is not None

    def __str__(self) -> str:
        parts = [f"raises {' or '.join(self.raises)}"] if self.raises else []
        return ", ".join(parts + ([f"first line matching /{self.match}/"] if self.match else []))


def _leaves(error: BaseException):
    if isinstance(error, BaseExceptionGroup):
        for member in error.exceptions:
            yield from _leaves(member)
    else:
        yield error


def type_names(error: BaseException) -> set[str]:
    """The names ``raises`` may use for ``error``: each class of its MRO, plain and module-qualified."""
    names = {CRASH} if isinstance(error, ProcessDied) else set()
    for cls in type(error).__mro__:
        names |= {cls.__name__, f"{cls.__module__}.{cls.__qualname__}"}
    return names


def first_line(error: BaseException) -> str:
    """The failure's first line: the message's, without the type (``raises`` says the type)."""
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else ""


def describe(error: BaseException) -> str:
    """``Type: first line`` as a report shows a failure."""
    line = first_line(error)
    return f"{type(error).__name__}: {line}" if line else type(error).__name__


def draft_match(line: str) -> str:
    """A ``match`` drafted from a first line: literal, but numbers with a fraction or an exponent (the
    values and bounds that move with the seed and the CPU) match any such number; its first 160
    characters (a prefix is a pattern too)."""
    line, parts, last = line[:160], [], 0
    for number in _FLOAT.finditer(line):
        parts += [re.escape(line[last:number.start()]), r"[-+.\de]+"]
        last = number.end()
    return "".join(parts + [re.escape(line[last:])])
