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

from ortcheck import golden_cli, run
from ortcheck.history import command as history_command
from ortcheck.findings import listing
from ortcheck.report import merge
from ortcheck.usercheck import command as check_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ortcheck", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parser(commands)
    check_command.add_parser(commands)
    golden_cli.add_parser(commands)
    listing.add_parser(commands)
    merge.add_parser(commands)
    history_command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return run.run(args)
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
