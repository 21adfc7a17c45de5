"""The report folder of ``ortcheck check``: ``check.json`` (everything), ``check.md`` (what the
terminal shows, with the module tree and its verdicts), and on a mismatch ``check.png`` (the tree as
a picture) in ``check.html``, beside the reproduction."""
from __future__ import annotations

import json
from pathlib import Path

from ortcheck.usercheck import picture
from ortcheck.usercheck.result import CheckResult


def write(result: CheckResult, report_dir) -> Path:
    folder = Path(report_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "check.json").write_text(json.dumps(result.to_json(), indent=2, default=str))
    (folder / "check.md").write_text(f"# ortcheck check\n\n```\n{result.format()}\n```\n")
    drawn = None
    if result.localization:
        title = f"{result.target} through {result.impl}: each submodule checked alone"
        drawn = picture.draw(result.localization, title, folder / "check.png")
    (folder / "check.html").write_text(picture.page(result, drawn))
    return folder
