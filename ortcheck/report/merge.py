"""``ortcheck report merge DIR... --out DIR``: one matrix from the reports of several runs.

Each input is a report folder ``ortcheck run`` wrote (``summary.json`` with its raw outcomes):
shards of one run (``--shard K/N``), the two environments, several machines. The merged matrix
has a column per implementation and says which environment and machine each column came from.
Refused, naming the inputs: a folder without a summary, the same shard twice or a shard missing,
and two runs on the same machine giving a test item different outcomes (a flaky verdict). Runs on
different machines may disagree: the cell shows the worse outcome, and ``findings_by_machine``
(summary.md: "Findings by machine") names, per finding, the machines where it held and what the
others said: how a user with a fleet sees a finding that is machine-specific.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path


from ortcheck.report.collector import SEVERITY, Outcome
from ortcheck.report.matrix import ConformanceMatrix
from ortcheck.report.summary import matrix_of, write_summary


class MergeError(ValueError):
    pass


def add_parser(commands) -> None:
    report = commands.add_parser("report", help="work with written reports")
    actions = report.add_subparsers(dest="report_command", required=True, metavar="ACTION")
    merge = actions.add_parser("merge", help="merge report folders (shards, environments, machines) into one")
    merge.add_argument("inputs", nargs="+", type=Path, metavar="DIR", help="report folders with a summary.json")
    merge.add_argument("--out", type=Path, required=True, help="folder for the merged summary.md/.json")


def run(args: argparse.Namespace) -> int:
    try:
        summary = merge(load(args.inputs))
    except MergeError as error:
        print(f"ortcheck report merge: {error}")
        return 2
    _carry_files(args.out, summary)
    write_summary(args.out, summary, f"ortcheck report (merged from {len(args.inputs)})")
    matrix = matrix_of(summary)
    print(f"merged {len(args.inputs)} report(s) into {args.out / 'summary.md'}: {matrix.counts()}")
    return 0 if matrix.ok else 1


def load(folders: list[Path]) -> list[tuple[Path, dict]]:
    loaded = []
    for folder in folders:
        path = folder / "summary.json"
        try:
            summary = json.loads(path.read_text())
        except FileNotFoundError:
            raise MergeError(f"{folder}: no summary.json (not a folder `ortcheck run` wrote)") from None
        except json.JSONDecodeError as error:
            raise MergeError(f"{path}: not valid JSON: {error}") from None
        if "outcomes" not in summary:
            raise MergeError(f"{path}: no raw outcomes (written by an older ortcheck; run it again)")
        loaded.append((folder, summary))
    return loaded


def merge(loaded: list[tuple[Path, dict]]) -> dict:
    _check_shards(loaded)
    seen: dict[tuple[str, str], dict[str, tuple[Path, Outcome]]] = {}  # (property, impl) -> machine -> outcome
    columns: dict[str, set[str]] = {}  # implementation -> where its outcomes ran
    for folder, summary in loaded:
        environment = summary["environment"]
        where = environment.get("machine", "an unnamed machine")
        for raw in summary["outcomes"]:
            outcome = _on_device(Outcome(**raw), environment.get("device", "cpu"))
            columns.setdefault(outcome.impl, set()).add(_origin(folder, environment))
            runs = seen.setdefault((outcome.property, outcome.impl), {})
            if where in runs and runs[where][1].status != outcome.status:
                other, earlier = runs[where]
                raise MergeError(f"{outcome.property} ({outcome.impl}) is {earlier.status} in {other} but "
                                 f"{outcome.status} in {folder}, on the same machine ({where}): a flaky verdict")
            runs.setdefault(where, (folder, outcome))
    # machines disagreeing is what a fleet is for: the cell shows the worst, the findings table says where
    outcomes = [min((o for _, o in runs.values()), key=lambda o: SEVERITY.index(o.status)) for runs in seen.values()]
    matrix = ConformanceMatrix.from_outcomes_by_family(outcomes)
    return {"environment": {"merged_from": [str(folder) for folder, _ in loaded]},
            "columns": {impl: sorted(origins) for impl, origins in sorted(columns.items())},
            "conformance": matrix.to_json(),
            "outcomes": [dataclasses.asdict(o) for o in sorted(outcomes, key=lambda o: (o.property, o.impl))],
            "findings_by_machine": findings_by_machine(seen),
            "convergence": [entry for _, s in loaded for entry in s.get("convergence", [])],
            "memory_plans": [entry for _, s in loaded for entry in s.get("memory_plans", [])]}


def findings_by_machine(seen: dict[tuple[str, str], dict[str, tuple[Path, Outcome]]]) -> list[dict]:
    """Per test an implementation's manifest expects to fail on some machine: the machines where the
    finding held (an expected failure) and what the others said (``fail`` where a strict one passed)."""
    table = []
    for (prop, impl), runs in sorted(seen.items()):
        statuses = {where: outcome.status for where, (_, outcome) in sorted(runs.items())}
        if "expected-fail" in statuses.values():
            table.append({"property": prop, "impl": impl,
                          "held_on": [where for where, status in statuses.items() if status == "expected-fail"],
                          "not_on": {where: status for where, status in statuses.items() if status != "expected-fail"}})
    return table


def _on_device(outcome: Outcome, device: str) -> Outcome:
    """Runs on another device than the CPU get columns of their own (``reference@cuda``): the same
    test on two devices is two cells, not a disagreement."""
    return outcome if device == "cpu" else dataclasses.replace(outcome, impl=f"{outcome.impl}@{device}")


def _origin(folder: Path, environment: dict) -> str:
    stack = f"torch {environment.get('torch', '?')}"
    return f"{stack} on {environment.get('machine', 'an unnamed machine')}"


def _check_shards(loaded: list[tuple[Path, dict]]) -> None:
    """Shards of one run (same implementations, tests, stack and device, same N) must be there once each."""
    runs: dict[tuple, dict[int, Path]] = {}
    for folder, summary in loaded:
        environment = summary["environment"]
        shard = environment.get("shard")
        if not shard:
            continue
        k, n = map(int, shard.split("/"))
        # one run: the same selection on the same stack; its shards may run on different machines
        run = (environment.get("impl"), environment.get("torch"), environment.get("selection", ""), n,
               environment.get("device", "cpu"))
        if k in runs.setdefault(run, {}):
            raise MergeError(f"shard {shard} twice: {runs[run][k]} and {folder}")
        runs[run][k] = folder
    for (impl, torch_version, _, n, _), shards in runs.items():
        missing = sorted(set(range(1, n + 1)) - set(shards))
        if missing:
            raise MergeError(f"shard(s) {', '.join(f'{k}/{n}' for k in missing)} of the {impl} run on torch "
                             f"{torch_version} missing (given: {', '.join(str(f) for f in shards.values())})")


def _carry_files(out: Path, summary: dict) -> None:
    """Convergence plots and tables move with the merged report; their paths are rewritten."""
    out.mkdir(parents=True, exist_ok=True)
    for entry in summary["convergence"]:
        for key in ("report_png", "report_csv"):
            if key in entry and Path(entry[key]).is_file():
                target = out / "convergence" / Path(entry[key]).name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(entry[key], target)
                entry[key] = str(target)
