"""The GPU nightly sizes itself from what one provider and one process cost on that GPU
(ortcheck/envsetup/gpu_plan.py): measured figures in, workers and live sessions out."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortcheck.envsetup import gpu_plan
from ortcheck.envsetup.gpu_plan import MIB, Measured, plan

GIB = 1024 * MIB
REPO = Path(__file__).resolve().parents[2]


def measured(free_gib=130.0, provider_mib=60.0, process_mib=600.0, total_gib=140.0):
    return Measured(free=int(free_gib * GIB), total=int(total_gib * GIB), per_provider=int(provider_mib * MIB),
                    per_process=int(process_mib * MIB))


def test_a_large_gpu_takes_every_core_but_the_jobs_own_and_caps_the_sessions():
    chosen = plan(measured(free_gib=130), cores=16)
    assert (chosen.workers, chosen.sessions, chosen.threads) == (14, gpu_plan.MAX_SESSIONS, 1)


def test_a_smaller_gpu_bounds_each_workers_sessions_by_its_share_of_memory():
    chosen = plan(measured(free_gib=75, provider_mib=40), cores=16)
    share = 75 * GIB * (1 - gpu_plan.HEADROOM) / 14 - 600 * MIB - gpu_plan.TEST_TENSORS
    assert chosen.workers == 14 and chosen.sessions == int(share // (40 * MIB))
    assert gpu_plan.MIN_SESSIONS <= chosen.sessions < gpu_plan.MAX_SESSIONS


def test_costly_providers_mean_fewer_workers_not_fewer_sessions_than_the_minimum():
    chosen = plan(measured(free_gib=40, provider_mib=200), cores=16)
    assert chosen.workers < 14 and chosen.sessions >= gpu_plan.MIN_SESSIONS
    assert "memory" in chosen.why
    assert chosen.threads == 16 // chosen.workers
    more = plan(measured(free_gib=40, provider_mib=200), cores=16).workers + 1
    share = 40 * GIB * (1 - gpu_plan.HEADROOM) / more - 600 * MIB - gpu_plan.TEST_TENSORS
    assert share // (200 * MIB) < gpu_plan.MIN_SESSIONS, "one more worker would have fit"


def test_a_gpu_too_small_for_one_process_is_an_error_naming_the_figures():
    with pytest.raises(ValueError, match=r"cannot hold one test process with 16 sessions: 1024 MiB free"):
        plan(measured(free_gib=1, provider_mib=200), cores=16)


@pytest.mark.parametrize("data, message", [
    ({"free": 1}, "expected numbers"),
    ({"free": "lots", "total": 2, "per_provider": 1, "per_process": 1}, "expected numbers"),
    ({"free": 3, "total": 2, "per_provider": 1, "per_process": 1}, "out of range"),
])
def test_a_malformed_measurement_is_refused(data, message):
    with pytest.raises(ValueError, match=message):
        Measured.from_json(data)


def test_the_command_prints_exports_for_the_job_and_the_plan_for_people(tmp_path, capsys):
    path = tmp_path / "providers.json"
    path.write_text(json.dumps({"variants": {"default": json.loads(json.dumps(measured().__dict__))}}))
    assert gpu_plan.main(["--measured", str(path), "--cores", "16"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "export WORKERS=14 REFERENCE_CUDA_SESSIONS=64"
    assert err.startswith("GPU plan: 14 workers x 64 live sessions, 1 threads each")


def test_the_nightly_job_prints_its_plan_before_it_starts(tmp_path):
    path = tmp_path / "providers.json"
    variant = measured(free_gib=75, provider_mib=100).__dict__
    path.write_text(json.dumps({"variants": {"cublas_16x8": variant, "cublas_4096x8": variant}}))
    env = {**os.environ, "OUT": str(tmp_path / "out"), "MEASURED": str(path), "DRY_RUN": "1"}
    run = subprocess.run(["bash", str(REPO / ".ci" / "gpu-nightly")], cwd=REPO, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "parts (box s): plan:30 determinism:20 gpu-tests:45" in run.stdout
    assert "GPU plan: " in run.stdout and "export WORKERS=" in run.stdout


def test_the_nightly_job_ends_with_the_events_of_the_night(tmp_path):
    """Its matrix run writes into the fleet's history (``HISTORY``); what changed since the last
    comparable night is the last thing it prints (here no part is selected: two nights ingested before)."""
    from ortcheck.history.ingest import ingest
    from ortcheck.history.store import opened
    from tests.history.test_history import report

    history, path = tmp_path / "fleet.sqlite", tmp_path / "providers.json"
    with opened(history) as connection:
        for night, status in ((1, "pass"), (2, "fail")):
            ingest(connection, report(tmp_path / f"night{night}", {"suites/t.py::test_a": status}, night=night))
    variant = measured(free_gib=75, provider_mib=100).__dict__
    path.write_text(json.dumps({"variants": {"cublas_16x8": variant, "cublas_4096x8": variant}}))
    env = {**os.environ, "OUT": str(tmp_path / "out"), "MEASURED": str(path), "PARTS": "none", "HISTORY": str(history),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # the job's python3: this one
    run = subprocess.run(["bash", str(REPO / ".ci" / "gpu-nightly")], cwd=REPO, env=env, capture_output=True, text=True)
    events = run.stdout.split("what changed since the last comparable night", 1)[-1]
    assert "new_fail" in events and "suites/t.py::test_a" in events, run.stdout + run.stderr


def test_the_costliest_of_several_measured_settings_plans():
    cheap, costly = measured(free_gib=70, provider_mib=9), measured(free_gib=75, provider_mib=41, process_mib=700)
    worst = Measured.worst([cheap, costly])
    assert (worst.free, worst.per_provider, worst.per_process) == (cheap.free, costly.per_provider, costly.per_process)


def test_an_unmeasured_variant_is_a_usage_error_naming_what_was_measured(tmp_path, capsys):
    path = tmp_path / "providers.json"
    path.write_text(json.dumps({"variants": {"default": measured().__dict__}}))
    with pytest.raises(SystemExit):
        gpu_plan.main(["--measured", str(path), "--variant", "default,cublas_16x8"])
    assert "--variant cublas_16x8: " in capsys.readouterr().err
