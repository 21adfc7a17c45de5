"""``--collect-findings FILE``: a draft manifest entry for every unexpected failure of a run.

As PyTorch regenerates its expected-failure tables from a run (``PYTORCH_COLLECT_EXPECT=1``), a
maintainer gets one ``[[finding]]`` per failed test: the test id as a glob, the failure's first
line as the reason, what the failure looks like (``raises``: its type; ``match``: its first line with
the numbers that move between seeds and CPUs generalized) and hypothesis' shrunk example as the
reproduction, grouped by implementation.
They edit the reason, turn the example into the suite's ``examples`` form and move the entry into
``ortcheck/impls/manifests/<impl>.toml``. The file is valid manifest TOML as written.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ortcheck.findings.failures import FAILURE_PROPERTY, draft_match
from ortcheck.report.collector import impl_of

_GLOB_SPECIALS = {"[": "[[]", "*": "[*]", "?": "[?]"}
_MARKERS = ("Falsifying example", "Failing test case")  # hypothesis' wordings


def glob_of(nodeid: str) -> str:
    """``nodeid`` as an fnmatch pattern matching exactly itself (as the manifests write ``[[]``)."""
    return "".join(_GLOB_SPECIALS.get(char, char) for char in nodeid)


def shrunk_example(text: str) -> str:
    """Hypothesis' falsifying example from a failure's long report, without pytest's ``E`` gutter."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if any(marker in line for marker in _MARKERS)), None)
    if start is None:
        return ""
    first = lines[start]
    marker = next(marker for marker in _MARKERS if marker in first)
    head = first[: first.index(marker)]
    example = []
    for line in [head + first.split(marker, 1)[1].lstrip(": "), *lines[start + 1:]]:
        body = line[1:] if line.startswith("E") else None
        if body is None or (example and not body.strip()) or "You can reproduce" in body or "Explanation" in body:
            break
        example.append(body)
    indent = min((len(line) - len(line.lstrip()) for line in example if line.strip()), default=0)
    return "\n".join(line[indent:] for line in example).strip()


class FindingDrafts:
    """A pytest plugin (on the controller under xdist): collects failures, writes them at the end."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.drafts: dict[str, list[dict]] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if not report.failed or hasattr(report, "wasxfail"):
            return
        properties = dict(report.user_properties)
        impl = properties.get("ortcheck_impl") or impl_of(report.nodeid) or "unknown"
        text = report.longreprtext or ""
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
        first_line = (crash.strip().splitlines() or text.strip().splitlines()[-1:] or ["failed"])[0]
        raises, line = properties.get(FAILURE_PROPERTY) or (None, None)  # the plugin's, on the worker
        example = shrunk_example(text)
        draft = {"test": glob_of(report.nodeid), "reason": f"{report.when}: {first_line}"[:300]}
        if raises:
            draft["raises"] = raises
        if line:
            draft["match"] = draft_match(line)
        if not raises and not line:
            draft["match"] = draft_match(first_line)
        draft["reproduction"] = example or f"pytest '{report.nodeid}' --impl {impl}"
        self.drafts.setdefault(impl, []).append(draft)

    def pytest_sessionfinish(self, session) -> None:
        lines = ["# Draft findings collected by --collect-findings: edit each reason, add a reproduction that",
                 "# stands alone, and move the entry into ortcheck/impls/manifests/<impl>.toml.", ""]
        for impl, drafts in sorted(self.drafts.items()):
            lines.append(f"# -- {impl} ({len(drafts)})")
            for draft in drafts:
                lines += ["[[finding]]", *(f"{key} = {json.dumps(value)}" for key, value in draft.items()), ""]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=self.path.parent, delete=False, suffix=".tmp") as handle:
            handle.write("\n".join(lines))
        os.replace(handle.name, self.path)  # atomically: never a half-written file over the user's
