"""``ortcheck``: the main job (conformance matrix + report) and golden-file tools.

``ortcheck run`` runs the conformance suites through pytest with the ortcheck plugin, prints a
property x implementation matrix and writes ``report/summary.json`` and ``report/summary.md``
(with a PNG and CSV per convergence case). ``ortcheck golden update|diff`` manage golden curves;
``ortcheck findings`` lists the known findings of the manifests (docs/findings.md);
``ortcheck report merge`` combines the reports of shards, environments and machines; ``ortcheck history``
keeps every run in one SQLite file and says what changed since the last comparable run;
``ortcheck check MODULE:FACTORY`` checks the user's own model (:mod:`ortcheck.usercheck`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ortcheck import golden_cli, impls, profiles
from ortcheck.impls.base import DEVICES
from ortcheck.history import command as history_command
from ortcheck.findings import listing
from ortcheck.report import merge
from ortcheck.usercheck import command as check_command

REPO_ROOT = Path(__file__).resolve().parent.parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ortcheck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run the conformance suites and write the report")
    run.add_argument("--impl", default=impls.DEFAULT, type=impl_spec,
                     help=f"implementations to check (default {impls.DEFAULT}): comma-separated names, all, available, "
                          f"-NAME; valid names: {', '.join(impls.names())}")
    run.add_argument("--device", default="cpu", choices=DEVICES)
    run.add_argument("--profile", default=None, choices=profiles.PROFILES,
                     help="hypothesis profile (default: ci on CI machines, else dev); nightly also runs the "
                          "tests marked nightly")
    run.add_argument("--suites", type=Path, default=REPO_ROOT / "suites", help="folder of conformance suites")
    run.add_argument("--report-dir", type=Path, default=Path("report"))
    run.add_argument("-k", dest="keyword", default=None, help="only properties matching this pytest -k expression")
    run.add_argument("-m", dest="markers", default=None, help="only tests matching this pytest -m marker expression")
    run.add_argument("-n", dest="workers", default="auto",
                     help="pytest-xdist worker processes (default auto; 0 runs in this process): a crash or a hang "
                          "in an implementation then fails one property and the run and its report go on")
    run.add_argument("--seed", type=int, default=None,
                     help="hypothesis seed (the dev and nightly profiles draw a random one, which the run prints)")
    run.add_argument("--impl-timeout", type=float, default=None, metavar="SECONDS",
                     help="time bound per property that runs implementation code (default: 900 s per 100 examples)")
    run.add_argument("--shard", type=shard_spec, default=None, metavar="K/N",
                     help="run only the K-th of N slices of the selected tests, balanced by the durations recorded "
                          "in .test_durations (pytest-split); merge the reports with `ortcheck report merge`")
    run.add_argument("--collect-findings", type=Path, default=None, metavar="FILE",
                     help="write a draft manifest entry for every unexpected failure into FILE (edit, then move "
                          "it into the implementation's manifest)")
    run.add_argument("--history", type=Path, default=None, metavar="DB",
                     help="also keep the run in this history file (`ortcheck history events` says what changed)")
    check_command.add_parser(commands)
    golden_cli.add_parser(commands)
    listing.add_parser(commands)
    merge.add_parser(commands)
    history_command.add_parser(commands)
    return parser


def impl_spec(text: str) -> str:
    """An ``--impl`` value the plugin will accept (checked here, so a typo fails before pytest starts)."""
    try:
        impls.select(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def shard_spec(text: str) -> str:
    """``K/N`` with 1 <= K <= N."""
    k, slash, n = text.partition("/")
    if not (slash and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"--shard wants K/N with 1 <= K <= N (e.g. 2/3), got {text!r}")
    return f"{int(k)}/{int(n)}"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        from ortcheck.run import run

        return run(args)
    if args.command == "check":
        return check_command.run(args)
    if args.command == "findings":
        return listing.run(args)
    if args.command == "report":
        return merge.run(args)
    if args.command == "history":
        return history_command.run(args)
    return golden_cli.run(args)


if __name__ == "__main__":
    sys.exit(main())
