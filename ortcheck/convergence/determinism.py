"""Determinism settings for a training run, and the fingerprint of the stack it ran on.

Why both: a curve is only reproducible when the seed, deterministic algorithms and thread count
are pinned (on GPU also cuBLAS' workspace and TF32), and only comparable bit for bit with a golden
recorded on the same stack. The settings are applied for the run and restored afterwards; the
fingerprint decides whether a golden comparison blocks (same stack) or is advisory.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import os
import platform
import random
from typing import Iterator

import torch

from ortcheck import machine

CUBLAS_WORKSPACE_CONFIG = ":4096:8"  # what torch's reproducibility notes require for deterministic cuBLAS
DEFAULT_THREADS = 1  # pytest -n auto gives every worker a core; one thread also pins summation order


@dataclasses.dataclass(frozen=True)
class Determinism:
    """What a run pinned. Recorded in golden files; ``None`` fields do not apply to the device."""

    seed: int = 0
    deterministic_algorithms: bool = True
    threads: int = DEFAULT_THREADS
    cublas_workspace_config: str | None = None
    allow_tf32: bool | None = None

    @classmethod
    def for_device(cls, device: str, seed: int = 0, threads: int = DEFAULT_THREADS) -> "Determinism":
        if device == "cuda":
            return cls(seed, True, threads, CUBLAS_WORKSPACE_CONFIG, False)
        return cls(seed, True, threads)

    def with_seed(self, seed: int) -> "Determinism":
        return dataclasses.replace(self, seed=seed)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@contextlib.contextmanager
def applied(settings: Determinism, device: str = "cpu") -> Iterator[None]:
    """Seed every RNG and pin algorithms/threads (and cuBLAS/TF32 on CUDA) inside the block only."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_python_rngs_restored())
        stack.enter_context(torch.random.fork_rng(devices=[torch.cuda.current_device()] if device == "cuda" else []))
        stack.enter_context(_torch_flags_restored())
        random.seed(settings.seed)
        torch.manual_seed(settings.seed)
        _seed_onnxruntime(settings.seed)
        torch.use_deterministic_algorithms(settings.deterministic_algorithms)
        torch.set_num_threads(settings.threads)
        if device == "cuda":
            stack.enter_context(_cuda_pinned(settings))
        yield


def _seed_onnxruntime(seed: int) -> None:
    """onnxruntime's Dropout kernels draw from a process-wide seed read when a session is built:
    without it, a pipeline's dropout masks change from run to run."""
    try:
        import onnxruntime
    except ImportError:
        return
    onnxruntime.set_seed(seed)


@contextlib.contextmanager
def _python_rngs_restored() -> Iterator[None]:
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


@contextlib.contextmanager
def _torch_flags_restored() -> Iterator[None]:
    saved = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
             torch.get_num_threads())
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.set_num_threads(saved[2])


@contextlib.contextmanager
def _cuda_pinned(settings: Determinism) -> Iterator[None]:
    """cuBLAS reads CUBLAS_WORKSPACE_CONFIG when it creates a handle: set it before the first matmul."""
    saved_env = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    backends = torch.backends
    saved = (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32, backends.cudnn.deterministic,
             backends.cudnn.benchmark)
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = settings.cublas_workspace_config or CUBLAS_WORKSPACE_CONFIG
    backends.cuda.matmul.allow_tf32 = backends.cudnn.allow_tf32 = bool(settings.allow_tf32)
    backends.cudnn.deterministic, backends.cudnn.benchmark = True, False
    try:
        yield
    finally:
        (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32, backends.cudnn.deterministic,
         backends.cudnn.benchmark) = saved
        if saved_env is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = saved_env


# Fingerprint fields added after goldens were first recorded (cuda only). A golden without one was
# recorded by older code: the field is unknown there, not different (see :func:`unrecorded`).
LATER_FIELDS = ("compute_capability", "tf32_matmul", "tf32_cudnn", "deterministic_algorithms", "cudnn_deterministic")


def fingerprint(device: str, dtype: str, threads: int, kernels: str | None = None) -> dict[str, str | int | None]:
    """The stack a curve depends on: library versions, kernel dispatch level, device, threads, and
    the kernels the implementation picked where the rest doesn't say (``Implementation.kernels``).
    Taken inside :func:`applied`, so torch's flags are the ones the runs had.

    Deliberately without Python's or the OS's version (they do not change float results), so a
    golden stays blocking across machines that compute the same bits.
    """
    return {
        "torch": torch.__version__,
        "onnxruntime": _onnxruntime_distribution(),
        "onnx": machine.distribution_version("onnx"),
        "machine": platform.machine(),
        "cpu_capability": machine.cpu_capability(),
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else None,
        "cuda": torch.version.cuda if device == "cuda" else None,
        "cudnn": torch.backends.cudnn.version() if device == "cuda" else None,
        "dtype": dtype,
        "threads": threads,
        "cpu_count": os.cpu_count(),  # onnxruntime's intra-op pool is sized by it: reduction order follows
        **(_cuda_facts() if device == "cuda" else {}),  # absent on the CPU: CPU fingerprints stay as recorded
        **({"kernels": kernels} if kernels else {}),  # absent where nothing of the kind: older goldens stay valid
    }


def _cuda_facts() -> dict[str, str | bool]:
    """What else decides a cuda float32 result: the GPU's architecture, and whether torch lets
    matmuls and convolutions round operands to TF32 or pick nondeterministic algorithms."""
    major, minor = torch.cuda.get_device_capability()
    backends = torch.backends
    return {"compute_capability": f"{major}.{minor}", "tf32_matmul": backends.cuda.matmul.allow_tf32,
            "tf32_cudnn": backends.cudnn.allow_tf32,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": backends.cudnn.deterministic}


def fingerprint_differences(recorded: dict, current: dict) -> list[str]:
    """``"field: recorded -> current"`` for each field that differs (empty: same stack); a
    :data:`LATER_FIELDS` field the golden doesn't hold is unknown, not a difference."""
    unknown = set(unrecorded(recorded, current))
    return [f"{key}: {recorded.get(key)!r} -> {current.get(key)!r}"
            for key in sorted((set(recorded) | set(current)) - unknown) if recorded.get(key) != current.get(key)]


def unrecorded(recorded: dict, current: dict) -> list[str]:
    """The :data:`LATER_FIELDS` this run knows and the golden, recorded by older code, doesn't."""
    return [key for key in LATER_FIELDS if key in current and key not in recorded]


def _onnxruntime_distribution() -> str | None:
    """``name==version`` of whatever provides ``onnxruntime`` (plain, -gpu, -training-cpu...), without
    importing it: importing onnxruntime-training loads ORTModule."""
    names = importlib.metadata.packages_distributions().get("onnxruntime", [])
    return ", ".join(sorted(f"{name}=={machine.distribution_version(name)}" for name in set(names))) or None

