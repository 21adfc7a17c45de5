"""The report folder of ``ortcheck check``: ``check.json`` (everything) and ``check.md`` (what the
terminal shows, with the module tree and its verdicts), beside the reproduction."""
from __future__ import annotations

import json
from pathlib import Path

from ortcheck.usercheck.result import CheckResult


def write(result: CheckResult, report_dir) -> Path:
    folder = Path(report_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "check.json").write_text(json.dumps(result.to_json(), indent=2, default=str))
    (folder / "check.md").write_text(f"# ortcheck check\n\n```\n{result.format()}\n```\n")
    return folder
