"""Golden tiers on cuda, from synthetic fingerprints (no GPU needed): what blocks, what is advisory,
and goldens recorded before the fingerprint knew the cuda fields (older cuda goldens, every CPU one)."""
from pathlib import Path

import pytest
import torch

from ortcheck import impls
from ortcheck.convergence import cases, determinism, golden as goldens, runner, workflow
from ortcheck.convergence.curves import CaseRun, Curve
from ortcheck.convergence.tolerance import FP32_PARITY

REPO = Path(__file__).resolve().parents[2]
CONFIG = {"steps": 2}
CUDA_SETTINGS = determinism.Determinism.for_device("cuda").to_json()
# What the code before these fields records on the H200 the GPU evidence ran on (torch 2.11 cu130).
H200_OLDER = {"torch": "2.11.0+cu130", "onnxruntime": "onnxruntime-gpu==1.31.1", "onnx": "1.23.1", "machine": "x86_64",
              "cpu_capability": "AVX512", "device": "cuda", "device_name": "NVIDIA H200", "cuda": "13.0",
              "cudnn": 91300, "dtype": "float32", "threads": 1, "cpu_count": 16}
H200 = {**H200_OLDER, "compute_capability": "9.0", "tf32_matmul": False, "tf32_cudnn": False,
        "deterministic_algorithms": True, "cudnn_deterministic": True}
H100 = {**H200, "device_name": "NVIDIA H100 80GB HBM3"}


def _run(fingerprint: dict, settings: dict = CUDA_SETTINGS) -> CaseRun:
    curve = Curve(0, {"loss": [1.0, 0.5], "grad_norm": [2.0, 1.0], "lr": [0.1, 0.1]})
    return CaseRun("mlp", "reference", "cuda", [curve], settings, fingerprint)


def tier(recorded: dict, current: dict, settings: dict = CUDA_SETTINGS) -> tuple[str, str | None]:
    golden = goldens.Golden(_run(recorded, settings), CONFIG, FP32_PARITY)
    return workflow.golden_tier(golden, _run(current), CONFIG)


def test_the_same_cuda_stack_blocks():
    assert tier(H200, H200) == (workflow.SAME_STACK, None)


@pytest.mark.parametrize("field, value", [
    ("torch", "2.13.0+cu130"),                 # the pinned torch judged by a golden from the GPU image's 2.11
    ("device_name", H100["device_name"]),      # an H200 golden judging an H100 run
    ("cuda", "12.8"), ("cudnn", 91002), ("onnxruntime", "onnxruntime-gpu==1.30.0"),
    ("compute_capability", "10.0"), ("tf32_matmul", True), ("tf32_cudnn", True),
    ("deterministic_algorithms", False), ("cudnn_deterministic", False),
])
def test_another_gpu_library_or_flag_is_advisory(field, value):
    name, advisory = tier(H200, {**H200, field: value})
    assert name.startswith(workflow.ADVISORY) and f"{field}: {H200[field]!r} -> {value!r}" in advisory


@pytest.mark.parametrize("field, value", [("cpu_count", 32), ("threads", 2), ("cpu_capability", "AVX2")])
def test_the_host_cpu_of_a_cuda_run_stays_within_tolerance(field, value):
    name, advisory = tier(H200, {**H200, field: value})
    assert advisory is None and name.startswith(workflow.COVERED_STACK) and field in name


def test_other_determinism_settings_are_advisory():
    name, advisory = tier(H200, H200, {**CUDA_SETTINGS, "allow_tf32": True})
    assert name.startswith(workflow.ADVISORY) and advisory == "recorded with other determinism settings (allow_tf32)"


def test_a_cuda_golden_written_before_the_new_fields_loads_and_blocks_on_its_own_gpu(tmp_path):
    path = goldens.path_for(tmp_path, "mlp", "reference", "cuda")
    goldens.write(path, goldens.Golden(_run(H200_OLDER), CONFIG, FP32_PARITY))
    golden = goldens.load(path)
    name, advisory = workflow.golden_tier(golden, _run(H200), CONFIG)
    assert advisory is None and name == workflow.SAME_STACK + "; not in the golden (older code): " + ", ".join(
        determinism.LATER_FIELDS)
    name, advisory = workflow.golden_tier(golden, _run(H100), CONFIG)
    assert "device_name" in advisory and "compute_capability" not in advisory   # unknown is no difference


def test_the_checked_in_cpu_goldens_are_judged_as_before():
    """Every CPU fingerprint field is one they hold, none is unknown to them, and their determinism
    settings are today's: the tier they get depends on nothing new."""
    now = determinism.fingerprint("cpu", "float32", determinism.DEFAULT_THREADS)
    paths = sorted((REPO / "golden").glob("*/*-cpu-float32.json"))
    assert paths
    for path in paths:
        golden = goldens.load(path)
        assert set(now) <= set(golden.run.fingerprint) and not determinism.unrecorded(golden.run.fingerprint, now), path
        assert golden.run.determinism == determinism.Determinism.for_device("cpu").to_json(), path


def test_the_cuda_fingerprint_records_the_gpu_and_torchs_flags(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *args: (9, 0))
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91300)
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False   # both unlike their defaults
    try:
        found = determinism.fingerprint("cuda", "float32", 1)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert {key: found[key] for key in ("device_name", "cuda", "cudnn", *determinism.LATER_FIELDS)} == {
        "device_name": "NVIDIA H200", "cuda": "13.0", "cudnn": 91300, "compute_capability": "9.0",
        "tf32_matmul": True, "tf32_cudnn": False, "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic}
    assert not set(determinism.LATER_FIELDS) & set(determinism.fingerprint("cpu", "float32", 1))


def test_the_runner_takes_the_fingerprint_under_the_runs_settings(monkeypatch):
    seen = []
    take = determinism.fingerprint
    monkeypatch.setattr(determinism, "fingerprint",
                        lambda *args: seen.append(torch.are_deterministic_algorithms_enabled()) or take(*args))
    assert not torch.are_deterministic_algorithms_enabled()
    runner.run_all(cases.get("mlp"), impls.get("eager"), steps=2, oracle=False)
    assert seen == [True]
