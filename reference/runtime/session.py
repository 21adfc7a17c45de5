"""One onnxruntime session over one graph, fed and read as torch tensors.

The onnxruntime session itself lives in :mod:`reference.runtime.pool` (a bounded number per
process), on the process's thread budget (:mod:`reference.runtime.threads`) and, on CUDA, on torch's
stream and numbers (:mod:`reference.runtime.cuda`).
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import onnx
import onnxruntime as ort
import torch
from onnxruntime.capi import _pybind_state as C

from reference.runtime import cuda, pool, threads
from reference.runtime import kernel_forms
from reference.runtime.tensors import from_ort, to_ort

_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
pool.on_drop("cuda", cuda.free_cached)


def session_options(arena: bool = True) -> ort.SessionOptions:
    """``arena=False``: memory goes back to the allocator when a run frees it, instead of staying
    in a per-session pool; for the many small sessions of a staged backward (``reference.grads``),
    where per-session pools would each keep their own high-water mark."""
    options = threads.configure(ort.SessionOptions())
    options.enable_cpu_mem_arena = arena
    # onnxruntime's pool spins between runs by default; torch's threads (loss, optimizer, autograd)
    # then fight it for the cores. Measured on 2 cores: 1.12-1.20x eager spinning, 0.70-0.75x not.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    # Basic rewrites only (constant folding, redundant nodes), less :data:`STASH_DEPENDENT_FUSIONS`.
    # The extended fusions (Add+Gelu, MatMul+scale, ...) round differently from the ops they replace
    # and apply only where the intermediate is not a graph output, so which values the memory
    # optimizer stashes would change the numbers (measured: 3 ulp in a 2-layer transformer).
    # Recompute must change none. Step time on the Bloom-like LM: 1.22x eager either way (AVX2).
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    return options


# The basic level's own fusions of that kind, each of which onnxruntime (1.31) skips when the value
# it would fuse away is a graph output: 1/x·y as y/x (the zoo's llama: RMSNorm's reciprocal, stashed
# at level 0 but not at level 1, moved its logits by up to 327 ulp), MatMul+Add and Gemm+Sum as one
# Gemm (the bias inside the sum), Conv/MatMul with a following Add, Mul or BatchNorm folded into
# the weights, the Gelu and LayerNormalization patterns as one kernel. Disabled, so a stash never
# decides a rounding; the reference makes its own fusions before the memory optimizer plans
# (reference.autodiff.fuse). onnxruntime ignores a name it does not know, so
# tests/reference/runtime/test_stash_dependent_fusions.py shows each one applies and is disabled.
STASH_DEPENDENT_FUSIONS = ("DivMulFusion", "MatMulAddFusion", "GemmSumFusion", "ConvAddFusion", "ConvMulFusion",
                           "ConvBNFusion", "MatMul_BatchNormalization_Fusion", "GeluFusionL1", "LayerNormFusionL1")


class Session:
    def __init__(self, model: onnx.ModelProto, device: str = "cpu", arena: bool = True):
        if device not in _PROVIDERS:
            raise ValueError(f"unknown device {device!r}; valid: {', '.join(_PROVIDERS)}")
        self.device = torch.device(device) if device == "cpu" else torch.device(device, torch.cuda.current_device())
        self._model = kernel_forms.for_device(model, device).SerializeToString()
        self._deterministic_model: bytes | None = None  # CUDA under torch's deterministic mode, made once asked
        self._arena = arena
        # what the pool shares a session by: the graph's bytes and the options that differ between sessions
        self._content = (hashlib.sha256(self._model).digest(), arena)
        pool.hold(self, device, self._content, len(self._model))
        session = self.inference_session  # built now: names and types, and errors at build time
        self.input_names = [value.name for value in session.get_inputs()]
        self.output_names = [value.name for value in session.get_outputs()]
        self.output_types = [value.type for value in session.get_outputs()]  # "tensor(float)", ...
        ort_device = C.OrtDevice(C.OrtDevice.cuda() if device == "cuda" else C.OrtDevice.cpu(), C.OrtDevice.default_memory(),
                                 self.device.index or 0)
        self._fetch_devices = [ort_device] * len(self.output_names)
        self._run_options = ort.RunOptions()
        if device == "cuda":  # ordered on torch's stream: nothing to wait for at the end of a run
            self._run_options.add_run_config_entry("disable_synchronize_execution_providers", "1")

    @property
    def inference_session(self) -> ort.InferenceSession:
        """The live onnxruntime session; on CUDA one per compute stream and numerics flags in force."""
        if self.device.type == "cpu":  # built on the thread budget in force (reference.runtime.threads)
            return pool.get("cpu", (self._content, torch.get_num_threads()), self._create_cpu)
        return self._cuda_session(cuda.compute_stream(torch.cuda.current_stream(self.device)))

    def _cuda_session(self, stream: torch.cuda.Stream) -> ort.InferenceSession:
        flags = cuda.TorchFlags.current(stream)
        return pool.get("cuda", (self._content, flags), lambda: self._create_cuda(flags))

    def _create_cpu(self) -> ort.InferenceSession:
        options = session_options(self._arena)
        # No buffer sharing planned between a graph's values. onnxruntime's planner matches each value
        # against every buffer freed before it: on an autocast training graph of 1,444 nodes it planned for
        # 0.54 of the session's 0.56 s (0.055 s without). The CPU arena still hands freed blocks to later
        # values: on the Bloom-like LM (4x256, batch 8x128) the steady-state peak RSS above start stayed
        # 96/93 MiB (level 0) and 124/122 MiB (level 1), the step 0.283/0.270 s. CUDA keeps the planner's
        # sharing: device memory is what its users count, and it is unmeasured without a GPU.
        options.enable_mem_reuse = False
        return ort.InferenceSession(self._model, options, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=STASH_DEPENDENT_FUSIONS)

    def _create_cuda(self, flags: cuda.TorchFlags) -> ort.InferenceSession:
        options = session_options(self._arena)
        options.use_deterministic_compute = flags.deterministic  # as torch.use_deterministic_algorithms
        if cuda.shared_arena(flags):
            options.add_session_config_entry("session.use_env_allocators", "1")
        return ort.InferenceSession(self.cuda_model(flags), options,
                                    providers=["CUDAExecutionProvider", "CPUExecutionProvider"],
                                    provider_options=[cuda.provider_options(flags), {}],
                                    disabled_optimizers=STASH_DEPENDENT_FUSIONS)

    def cuda_model(self, flags: cuda.TorchFlags) -> bytes:
        """The serialized graph a CUDA provider under ``flags`` runs."""
        if not flags.deterministic:
            return self._model
        if self._deterministic_model is None:
            device_form = onnx.ModelProto.FromString(self._model)
            self._deterministic_model = kernel_forms.deterministic(device_form).SerializeToString()
        return self._deterministic_model

    def run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Outputs for ``inputs`` given in ``input_names`` order; no copies on either side."""
        feeds = C.OrtValueVector()
        for tensor in inputs:
            feeds.push_back(to_ort(tensor))
        fetches = C.OrtValueVector()
        if self.device.type == "cpu":
            self._run(self.inference_session, feeds, fetches)
        else:
            current = torch.cuda.current_stream(self.device)
            stream = cuda.compute_stream(current)
            with cuda.ordered(current, stream):
                try:
                    self._run(self._cuda_session(stream), feeds, fetches)
                except Exception as error:  # noqa: BLE001 - a device out of memory: once more with the pool emptied
                    if not pool.out_of_resources(error):
                        raise
                    pool.drop_idle("cuda")
                    fetches = C.OrtValueVector()
                    self._run(self._cuda_session(stream), feeds, fetches)
        return [from_ort(value) for value in fetches]

    def _run(self, session: ort.InferenceSession, feeds: C.OrtValueVector, fetches: C.OrtValueVector) -> None:
        session._sess.run_with_ortvaluevector(self._run_options, self.input_names, feeds, self.output_names,
                                              fetches, self._fetch_devices)
