"""What the machine and the stack are, as far as a verdict can depend on them.

Kernels dispatch on the CPU: torch on its capability level (``ATEN_CPU_CAPABILITY`` can lower it),
libraries such as bitsandbytes on the CPU's own feature flags (which no variable lowers). Manifest
conditions (``ortcheck.findings.manifest``) and golden fingerprints (``ortcheck.convergence.determinism``)
read these facts here, so both name a machine the same way.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
from pathlib import Path

import torch


@dataclasses.dataclass(frozen=True)
class Machine:
    cpu_flags: frozenset[str]
    cpu_capability: str | None
    device: str = "cpu"
    profile: str | None = None  # the hypothesis profile the run draws under (how deep its suites look)

    def version(self, distribution: str) -> str | None:
        return distribution_version(distribution)


def current(device: str = "cpu", profile: str | None = None) -> Machine:
    return Machine(cpu_flags(), cpu_capability(), device, profile)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux names them (``avx2``, ``avx512_bf16``...); empty where
    ``/proc/cpuinfo`` doesn't exist (then no flag condition holds)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cpu_capability() -> str | None:
    """torch's CPU kernel dispatch level (``AVX512``, ``AVX2``, ``DEFAULT``), after ``ATEN_CPU_CAPABILITY``."""
    get = getattr(torch.backends.cpu, "get_cpu_capability", None)
    return get() if get else None


def distribution_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` ("unknown CPU" where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    names = [value.strip() for key, _, value in (line.partition(":") for line in text.splitlines())
             if key.strip() == "model name"]
    return names[0] if names else "unknown CPU"


def describe(device: str = "cpu") -> str:
    """One line naming what a verdict or a ratio may depend on: the CPU, its vector extensions,
    torch's dispatch level, the device."""
    extensions = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if flag in cpu_flags()]
    return (f"{cpu_model()} ({', '.join(extensions) or 'no AVX2'}; torch capability {cpu_capability()}; "
            f"device {device})")
