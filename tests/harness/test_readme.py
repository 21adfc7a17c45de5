"""The README stays short and true: the two quick-start commands, tox envs and docs it names exist."""
import configparser
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_the_readme_reads_in_five_minutes():
    assert len(README.splitlines()) <= 225, "details belong in docs/: the README is the entry point"


def test_the_two_quick_start_commands_are_there():
    assert "python3 -m pip install tox==4.67.15 && python3 -m tox -e run" in README
    assert "python3 -m pip install tox==4.67.15 && python3 -m tox " in README


def test_every_tox_env_and_doc_it_names_exists():
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    envs = {section.removeprefix("testenv:") for section in tox.sections() if section.startswith("testenv:")}
    named = set(re.findall(r"tox -e ([\w-]+)", README))
    assert named and named <= envs, sorted(named - envs)
    docs = set(re.findall(r"docs/[\w.-]+\.md", README))
    assert docs and all((REPO / doc).is_file() for doc in docs), sorted(d for d in docs if not (REPO / d).is_file())
