"""The recompute config: every malformed entry is refused by name; a JSON file works like a list."""
import json

import pytest

from reference.recompute import RecomputeConfigError, optimize
from reference.recompute.config import Entry, load, parse_entry


def test_entries_parse_into_plan_strategy_and_count():
    assert parse_entry("Reshape+Where+Softmax+:1:-1") == Entry("Reshape+Where+Softmax+", 1, -1)
    assert str(parse_entry("Cast+:2:3")) == "Cast+:2:3"


@pytest.mark.parametrize("entry, message", [
    ("Gelu+:1", "has 2 field(s); expected 3"),
    ("Gelu+:1:-1:0", "has 4 field(s); expected 3"),
    (":1:-1", "names no plan"),
    ("Gelu+:7:-1", "unknown strategy '7'; valid: 0 (none), 1 (recompute), 2 (recompute with compromise)"),
    ("Gelu+:x:-1", "unknown strategy 'x'"),
    ("Gelu+:1:-5", "count -5 < -1 (-1 means all)"),
    ("Gelu+:1:all", "count 'all' that is not an integer"),
])
def test_a_malformed_entry_is_refused_naming_it_and_the_problem(entry, message):
    with pytest.raises(RecomputeConfigError) as raised:
        parse_entry(entry)
    assert repr(entry) in str(raised.value) and message in str(raised.value)


def test_a_json_file_holding_a_list_is_read_like_the_list(tmp_path):
    path = tmp_path / "plans.json"
    path.write_text(json.dumps(["Gelu+:1:-1", "Dropout+:1:1"]))
    assert load(str(path)) == load(["Gelu+:1:-1", "Dropout+:1:1"]) == (Entry("Gelu+", 1, -1), Entry("Dropout+", 1, 1))


@pytest.mark.parametrize("content, message", [
    ("Gelu+:1:-1", "is not JSON"),
    ('{"Gelu+": 1}', "holds a dict; expected a JSON list"),
])
def test_a_bad_config_file_is_refused_naming_it(tmp_path, content, message):
    path = tmp_path / "plans.json"
    path.write_text(content)
    with pytest.raises(RecomputeConfigError, match=message):
        load(str(path))


def test_a_missing_config_file_is_refused_naming_it(tmp_path):
    with pytest.raises(RecomputeConfigError, match="cannot read recompute config file .*missing.json"):
        load(str(tmp_path / "missing.json"))


def test_a_plan_that_matches_nothing_lists_the_plans_that_exist(bloom):
    with pytest.raises(RecomputeConfigError) as raised:
        optimize(bloom.graphs, 0, load(["Foo+:1:-1"]), bloom.sizes)
    assert "'Foo+:1:-1' matches no plan of this graph; plans: Dropout+:1, Gather+:1, Gelu+:1" in str(raised.value)


def test_a_strategy_the_plan_lacks_is_refused(bloom):
    with pytest.raises(RecomputeConfigError, match="plan Gelu\\+ has no strategy 2 .*; it offers: 1"):
        optimize(bloom.graphs, 0, load(["Gelu+:2:-1"]), bloom.sizes)


def test_the_last_entry_for_a_plan_wins(bloom):
    _, report = optimize(bloom.graphs, 0, load(["Gelu+:1:-1", "Gelu+:1:1"]), bloom.sizes)
    assert {row.name: row.applied for row in report.plans}["Gelu+"] == 1
    _, report = optimize(bloom.graphs, 0, load(["Gelu+:1:-1", "Gelu+:0:-1"]), bloom.sizes)
    assert not any(row.enabled for row in report.plans)


def test_an_unknown_level_is_refused(bloom):
    with pytest.raises(RecomputeConfigError, match="level must be one of"):
        optimize(bloom.graphs, 3)
