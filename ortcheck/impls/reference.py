"""``reference``: our own ORTModule pipeline (``reference/``), on the modern stack, behind an adapter.

The pipeline stands alone with its own options and counters; this adapter maps the harness's
:class:`Options` onto them and its :class:`~reference.options.Counters` back onto
:class:`Observations`, as ``_ortmodule_env``/``_ortmodule_observe`` do for ORTModule. An option the
pipeline does not implement yet is refused by name: a property checked under an option that is
silently ignored would report a pass for something never run.
"""
from __future__ import annotations

import dataclasses
import importlib.util

import torch

from ortcheck.impls._reference_io import ReferenceIO
from ortcheck.impls.base import Capability, Implementation, MemoryPlan, MemoryPlans, Observations, Options
from ortcheck.models.linear4bit import ORT_CPU_BLOCK_SIZES

# Harness options the pipeline maps one to one; every other field must keep its default.
_MAPPED = ("fallback", "device", "memory_opt_level", "memory_opt_config", "mem_efficient_grad")


class ReferenceImpl(ReferenceIO, Implementation):
    name = "reference"
    CAPABILITIES = frozenset({Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA, Capability.IO_THROUGH_MODULE,
                              Capability.TRAINS, Capability.TRANSITIONS, Capability.RECOMPUTE,
                              Capability.KEPT_TENSORS_VISIBLE, Capability.CONVERGENCE, Capability.BNB4,
                              Capability.MEM_EFFICIENT_GRAD})

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("onnxruntime") is None:
            return "onnxruntime is not installed"
        if importlib.util.find_spec("onnxruntime.training") is not None:
            return "reference targets the modern stack (onnxruntime without training); run it in the modern env"
        return None

    def bnb4_block_sizes(self) -> tuple[int, ...]:
        """What onnxruntime's CPU ``MatMulBnb4`` kernel, which runs the 4-bit product, accepts."""
        return ORT_CPU_BLOCK_SIZES

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        from reference import ReferenceModule

        self.check_options(options)
        return ReferenceModule(module, self._reference_options(options))

    def refusal_errors(self) -> tuple[type[BaseException], ...]:
        from reference.module.wrapper import REFUSALS

        return REFUSALS

    def reconfigure(self, wrapped, options: Options) -> None:
        self.check_options(options)
        wrapped.set_options(self._reference_options(options))

    @staticmethod
    def _reference_options(options: Options):
        from reference import Options as ReferenceOptions

        return ReferenceOptions(**{name: getattr(options, name) for name in _MAPPED})

    def check_options(self, options: Options) -> None:
        options.refuse_unmapped(_MAPPED, "the reference pipeline")

    def observe(self, wrapped) -> Observations:
        return Observations(**dataclasses.asdict(wrapped.counters()))

    def memory_plans(self, wrapped) -> MemoryPlans | None:
        report = wrapped.memory_report()
        if report is None:
            return None
        plans = tuple(MemoryPlan(row.name, row.strategy, row.enabled, row.freq, row.applied, row.max_saving,
                                 row.saving_symbolic) for row in report.plans)
        applied = [row.applied_saving for row in report.plans]
        return MemoryPlans(plans, f"{report.table()}\n\n{report.detail()}",
                           None if None in applied else sum(applied), report.kept_leaf_bytes, report.layer_inputs)
