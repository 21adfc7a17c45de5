"""``ortcheck history``: report folders into one SQLite file, and what changed since the last comparable run."""
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from ortcheck.cli import main
from ortcheck.history.events import compare, latest_runs
from ortcheck.history.ingest import ingest
from ortcheck.history import store
from ortcheck.history.store import HistoryError, opened
from ortcheck.report.collector import Outcome
from ortcheck.report.summary import write_summary

M1, M2 = "AMD EPYC (avx512f; device cpu)", "Intel Xeon (avx2; device cpu)"
XPASS = "[XPASS(strict)] [reference manifest] known"

# per property, its status in runs 1..6 on machine M1 (None: absent from that run)
NIGHTS = {
    "suites/t.py::test_a": ["pass", "fail", "pass", "fail", "pass", "pass"],
    "suites/t.py::test_b": ["pass", "pass", "expected-fail", "expected-fail", "xpass", "pass"],
    "suites/t.py::test_c": ["pass", "pass", "pass", None, "pass", "pass"],
    "suites/t.py::test_d": ["pass", "pass", "pass", "pass", "pass", "refused"],
}
EXPECTED = {  # run -> the events of its comparison with the run before
    2: [("new_fail", "suites/t.py::test_a")],
    3: [("fixed", "suites/t.py::test_a"), ("new_finding", "suites/t.py::test_b")],
    4: [("flaky", "suites/t.py::test_a"), ("missing", "suites/t.py::test_c")],
    5: [("fixed", "suites/t.py::test_a"), ("no_longer_failing", "suites/t.py::test_b")],
    6: [("now_refused", "suites/t.py::test_d")],
}


def report(folder: Path, statuses: dict[str, str | None], machine: str = M1, night: int = 1,
           convergence: list[dict] = (), factors: dict[str, float] = {}) -> Path:
    outcomes = [Outcome(prop, "reference", "fail" if status == "xpass" else status,
                        XPASS if status == "xpass" else ("AssertionError: off" if status == "fail" else ""),
                        factors.get(prop))
                for prop, status in statuses.items() if status is not None]
    environment = {"impl": "reference", "device": "cpu", "machine": machine, "torch": "2.13.0", "python": "3.11",
                   "finished": f"2026-11-{night:02d}T03:00:00+00:00", "hypothesis": "hypothesis derandomized (profile ci)"}
    write_summary(folder, {"environment": environment, "conformance": {}, "outcomes": [o.__dict__ for o in outcomes],
                           "convergence": list(convergence), "memory_plans": []}, "night")
    return folder


def nights(tmp_path: Path, machine: str = M1, prefix: str = "m1") -> list[Path]:
    return [report(tmp_path / f"{prefix}-{n + 1}", {p: s[n] for p, s in NIGHTS.items()}, machine, n + 1)
            for n in range(6)]


def test_six_nights_name_each_change_once(tmp_path):
    db = tmp_path / "history.sqlite"
    with opened(db) as connection:
        runs = [ingest(connection, folder) for folder in nights(tmp_path)]
        found = {n + 1: [(e.kind, e.property) for e in compare(connection, run).events] for n, run in enumerate(runs)}
    assert found == {1: [], **EXPECTED}


def test_two_machines_of_one_night_sit_side_by_side(tmp_path):
    """Machine-conditional findings exist: another machine's verdict is never a change of this one's."""
    db = tmp_path / "history.sqlite"
    with opened(db) as connection:
        for folder in nights(tmp_path):
            ingest(connection, folder)
        other = {p: "fail" if p.endswith("test_a") else "pass" for p in NIGHTS}  # fails there, every night
        ingest(connection, report(tmp_path / "m2-1", other, M2, 1))
        ingest(connection, report(tmp_path / "m2-2", other, M2, 2))
        comparisons = [compare(connection, run) for run in latest_runs(connection)]
    assert [(c.machine, [(e.kind, e.property) for e in c.events]) for c in comparisons] == [(M1, EXPECTED[6]), (M2, [])]


def test_ingesting_a_run_twice_is_a_no_op(tmp_path):
    folder = report(tmp_path / "r", {"suites/t.py::test_a": "pass"})
    with opened(tmp_path / "h.sqlite") as connection:
        assert ingest(connection, folder) == 1
        assert ingest(connection, folder) is None
        assert connection.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (1,)


def _ingest_all(db: str, folders: list[str]) -> None:
    with opened(Path(db)) as connection:
        for folder in folders:
            ingest(connection, Path(folder))


def test_processes_ingesting_into_one_file_at_once_lose_and_duplicate_nothing(tmp_path):
    folders = [str(report(tmp_path / f"r{k}", {f"suites/t.py::test_{k}": "pass"}, night=k + 1)) for k in range(12)]
    db = str(tmp_path / "h.sqlite")
    context = multiprocessing.get_context("spawn")
    # overlapping; daemons, so a worker stuck past the bound fails the test instead of hanging pytest's exit
    workers = [context.Process(target=_ingest_all, args=(db, folders[k::2] + folders), daemon=True) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    stuck = [k for k, worker in enumerate(workers) if worker.is_alive()]
    for k in stuck:
        workers[k].terminate()
    assert not stuck and [worker.exitcode for worker in workers] == [0] * 4, \
        f"workers stuck after 300 s: {stuck}; exit codes {[worker.exitcode for worker in workers]}"
    with opened(Path(db)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone() == (12,)
        assert connection.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (12,)


def test_a_newer_or_foreign_file_is_refused_and_left_as_it_was(tmp_path, capsys):
    folder = report(tmp_path / "r", {"suites/t.py::test_a": "pass"})
    newer = tmp_path / "newer.sqlite"
    with sqlite3.connect(newer) as connection:
        connection.execute("PRAGMA user_version = 99")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE mine (x)")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all, not even close")
    for path, message in ((newer, "schema version 99, newer"), (foreign, "not an ortcheck history"),
                          (garbage, "not a history file")):
        before = path.read_bytes()
        assert main(["history", "ingest", str(folder), "--history", str(path)]) == 2
        out = capsys.readouterr().out
        assert message in out and len(out.strip().splitlines()) == 1, out
        assert path.read_bytes() == before


def test_bad_report_folders_are_refused_and_nothing_is_written(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    good = report(tmp_path / "good", {"suites/t.py::test_a": "pass"})
    truncated = report(tmp_path / "truncated", {"suites/t.py::test_a": "pass"})
    (truncated / "summary.json").write_text((truncated / "summary.json").read_text()[:40])
    for bad, message in ((tmp_path, "no summary.json"), (truncated, "not valid JSON")):
        assert main(["history", "ingest", str(good), str(bad), "--history", str(db)]) == 2
        assert message in capsys.readouterr().out
    assert not db.exists() or main(["history", "show", "*", "--history", str(db)]) == 2


def test_events_gate_show_and_prune_from_the_command_line(tmp_path, capsys):
    db = str(tmp_path / "h.sqlite")
    folders = nights(tmp_path)
    assert main(["history", "ingest", *map(str, folders[:2]), "--history", db]) == 0
    capsys.readouterr()
    assert main(["history", "events", "--history", db]) == 1  # run 2: a new FAIL stops the gate
    assert "**new_fail** (1)" in capsys.readouterr().out
    assert main(["history", "events", "--history", db, "--fail-on", ""]) == 0
    assert main(["history", "events", "--history", db, "--fail-on", "nonsense"]) == 2
    capsys.readouterr()
    assert main(["history", "show", "suites/t.py::test_a", "--history", db]) == 0
    assert [line.split(": ")[1].split()[0] for line in capsys.readouterr().out.splitlines()] == ["pass", "fail"]
    assert main(["history", "prune", "--keep-days", "0", "--history", db]) == 0
    assert "2 runs older than 0 days removed" in capsys.readouterr().out
    with opened(Path(db)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM verdicts").fetchone() == (0,)


def test_the_page_shows_each_groups_runs_events_and_changed_properties(tmp_path):
    from ortcheck.history.page import render

    with opened(tmp_path / "h.sqlite") as connection:
        for folder in nights(tmp_path):
            ingest(connection, folder)
        page = render(connection, "nightly")
    assert page.count("<h2 class='group'>") == 1 and "data:image/png;base64," in page
    assert "<b>now_refused</b>" in page  # the latest run's event
    stripes = page.split("<table class='stripes'>")[1]
    assert "test_a" in stripes and "test_c" in stripes and "test_d" in stripes  # changed (or absent) within the runs


def test_a_convergence_case_walking_towards_its_bound_is_named(tmp_path):
    """Still passing, its worst error growing every night: named once the last 3 runs each grew."""
    test = "suites/test_convergence.py::test_convergence[reference-bloom_lm]"
    with opened(tmp_path / "h.sqlite") as connection:
        found = []
        for night, ratio in enumerate([1.1, 1.0, 1.3, 1.9, 2.6], 1):
            entry = {"test": test, "status": "pass",
                     "convergence_parity": f"float64 oracle: worst error {ratio:.2f}x the scale (bound 32x)"}
            run = ingest(connection, report(tmp_path / f"n{night}", {"suites/t.py::test_a": "pass"}, night=night,
                                            convergence=[entry]))
            found.append([(e.kind, e.property, e.reason) for e in compare(connection, run).events])
    assert found[:4] == [[], [], [], []]
    assert found[4] == [("drifting", test, "worst error 1.00x -> 1.30x -> 1.90x -> 2.60x eager's")]


def test_a_numeric_finding_whose_factor_moved_more_than_twofold_is_named(tmp_path):
    """An expected failure's error over the oracle's bound, night by night: 1.6x apart is noise, 2.5x
    a defect that grew (or one shrinking towards a pass that would make its manifest entry stale)."""
    test = "suites/t.py::test_a"
    with opened(tmp_path / "h.sqlite") as connection:
        found = []
        for night, factor in enumerate([5.0, 8.0, 20.0, 6.0], 1):
            run = ingest(connection, report(tmp_path / f"n{night}", {test: "expected-fail"}, night=night,
                                            factors={test: factor}))
            found.append([(e.kind, e.property, e.reason) for e in compare(connection, run).events])
    assert found == [[], [], [("factor_moved", test, "error over the bound 8x -> 20x")],
                     [("factor_moved", test, "error over the bound 20x -> 6x")]]


def test_a_version_1_history_is_migrated_in_place_its_runs_kept(tmp_path):
    db = tmp_path / "v1.sqlite"
    connection = sqlite3.connect(db)
    for statement in filter(str.strip, store._SCHEMA.split(";")):
        connection.execute(statement)
    connection.execute("INSERT INTO runs (id, digest, source, ingested, environment) VALUES (1, 'd', 's', 'now', '{}')")
    connection.execute("INSERT INTO verdicts VALUES (1, 'suites/t.py::test_a', 'reference', 'pass', '')")
    connection.execute("PRAGMA user_version = 1")
    connection.commit()
    connection.close()
    with opened(db) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == store.VERSION
        assert connection.execute("SELECT property, factor FROM verdicts").fetchall() == [("suites/t.py::test_a", None)]


def test_a_convergence_case_nearing_its_goldens_edge_is_named(tmp_path):
    """Its share of the golden's window grows every night while its parity with eager stays put."""
    test = "suites/test_convergence.py::test_convergence[reference-mlp]"
    with opened(tmp_path / "h.sqlite") as connection:
        found = []
        for night, used in enumerate([0.2, 0.1, 0.3, 0.5, 0.8], 1):
            entry = {"test": test, "status": "pass", "golden_window_used": used,
                     "convergence_parity": "float64 oracle: worst error 1.00x the scale (bound 32x)"}
            run = ingest(connection, report(tmp_path / f"n{night}", {"suites/t.py::test_a": "pass"}, night=night,
                                            convergence=[entry]))
            found.append([(e.kind, e.reason) for e in compare(connection, run).events])
    assert found == [[], [], [], [], [("drifting", "golden window used 0.10x -> 0.30x -> 0.50x -> 0.80x")]]


def test_a_step_time_ratio_outside_its_band_is_named_and_a_malformed_benchmark_refused(tmp_path):
    """The benchmark's ratio to eager against the median of the previous runs' (x/÷ 1.25): noise of
    a few percent is quiet, a step 30% slower (or faster) is named."""
    with opened(tmp_path / "h.sqlite") as connection:
        found = []
        for night, ratio in enumerate([1.20, 1.26, 1.22, 1.24, 1.62, 1.23], 1):
            folder = report(tmp_path / f"n{night}", {"suites/t.py::test_a": "pass"}, night=night)
            (folder / "bench").mkdir()
            (folder / "bench" / "step_time.json").write_text(json.dumps(
                {"config": {}, "results": {"eager": {"median_step_s": 0.5, "ratio_to_eager": 1.0},
                                           "reference": {"median_step_s": 0.5 * ratio, "ratio_to_eager": ratio}}}))
            found.append([(e.kind, e.property, e.impl, e.reason) for e in compare(connection, ingest(connection, folder)).events])
        assert found[:4] == [[], [], [], []] and found[5] == []
        assert found[4] == [("step_time", "step_time", "reference",
                             "slower: 1.62x eager, band 0.98x-1.54x around the median 1.23x of the last 4 runs")]
        from ortcheck.history.page import render

        trends = render(connection).split("<table class='trends'>")[1]
        assert "step_time: reference step time / eager&#x27;s" in trends and "<td>1.62</td>" in trends
        bad = report(tmp_path / "bad", {"suites/t.py::test_a": "pass"}, night=7)
        (bad / "bench").mkdir()
        (bad / "bench" / "step_time.json").write_text('{"config": {}}')
        with pytest.raises(HistoryError, match=r"bench/step_time.json: not a benchmark result"):
            ingest(connection, bad)
        assert connection.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 6
