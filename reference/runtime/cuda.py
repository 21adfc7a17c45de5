"""How the reference's sessions run on CUDA: as eager's numbers, on torch's stream, in one arena.

onnxruntime's CUDA execution provider has defaults unlike torch's, and each differs in the numbers
or the resources (docs/reference.md, "On CUDA"):
- ``use_tf32`` defaults to 1: float32 MatMul/Gemm/Conv in TF32, where torch computes products in
  float32 unless ``torch.backends.cuda.matmul.allow_tf32``. One provider flag covers both products
  and convolutions, so TF32 is on only where torch allows it for both (never less accurate than
  eager).
- ``cudnn_conv_algo_search`` defaults to EXHAUSTIVE (slow to build, may pick non-deterministic
  algorithms): HEURISTIC as ORTModule sets it, or cuDNN's fixed default algorithms when torch is
  deterministic (``use_deterministic_compute`` too).
- Each session is its own provider with its own stream and memory arena: here every session runs
  on torch's current stream, or a side stream ordered against it by events (no host
  synchronization either way), and sessions allocate from one arena per device registered once
  with the environment.
:func:`provider_options` is a pure function of torch's flags, tested without a GPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import warnings
from typing import Iterator

import onnxruntime as ort
import torch
from onnxruntime.capi import _pybind_state as C


@dataclasses.dataclass(frozen=True)
class TorchFlags:
    """What of torch's state decides how onnxruntime must compute to agree with it."""

    matmul_tf32: bool
    cudnn_tf32: bool
    deterministic: bool
    device_index: int
    stream: int  # the cudaStream_t torch computes on, as an integer

    @classmethod
    def current(cls, stream: torch.cuda.Stream) -> "TorchFlags":
        """torch's flags now, for a session computing on ``stream``."""
        return cls(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                   torch.are_deterministic_algorithms_enabled(), stream.device.index, stream.cuda_stream)


_side_streams: dict[int, torch.cuda.Stream] = {}


def compute_stream(current: torch.cuda.Stream) -> torch.cuda.Stream:
    """The stream onnxruntime computes on for torch's ``current`` one: that very stream, except
    torch's legacy default stream (handle 0), which the provider takes for "no stream" and replaces
    with one of its own (the first GPU run read outputs before they were written: NaN at step 2).
    Then a side stream of the device, which :func:`ordered` orders against torch's by events."""
    if current.cuda_stream != 0:
        return current
    index = current.device.index
    if index not in _side_streams:
        _side_streams[index] = torch.cuda.Stream(current.device)
    return _side_streams[index]


@contextlib.contextmanager
def ordered(current: torch.cuda.Stream, stream: torch.cuda.Stream) -> Iterator[None]:
    """Work enqueued on ``stream`` inside starts after ``current``'s enqueued so far, and
    ``current``'s later work after it: GPU-side waits, no host synchronization. Inputs torch frees
    and outputs it reads afterwards are then only touched after onnxruntime is done with them."""
    if stream is current:
        yield
        return
    stream.wait_stream(current)
    try:
        yield
    finally:
        current.wait_stream(stream)


def provider_options(flags: TorchFlags) -> dict[str, str]:
    """The CUDA execution provider's options under which a session computes as eager does."""
    return {
        "device_id": str(flags.device_index),
        "use_tf32": "1" if flags.matmul_tf32 and flags.cudnn_tf32 else "0",
        "cudnn_conv_algo_search": "DEFAULT" if flags.deterministic else "HEURISTIC",
        # cuDNN's largest workspaces stay in the arena once taken (ORTModule sets 1 but allocates
        # through torch's cache): one H200 worker held 45 GiB; 32 MiB at most instead
        "cudnn_conv_use_max_workspace": "0",
        "has_user_compute_stream": "1",
        "user_compute_stream": str(flags.stream),
        "arena_extend_strategy": "kSameAsRequested",
    }


# One arena per device for every session (``session.use_env_allocators``); False: registering it
# failed on this build, and each session keeps its own arena (growing only as requested).
_shared_arenas: dict[int, bool] = {}
_lock = threading.Lock()


def shared_arena(flags: TorchFlags) -> bool:
    """Register the device's shared arena once; whether sessions can use it."""
    with _lock:
        if flags.device_index not in _shared_arenas:
            info = C.OrtMemoryInfo("Cuda", C.OrtAllocatorType.ORT_ARENA_ALLOCATOR, flags.device_index, C.OrtMemType.DEFAULT)
            arena = C.OrtArenaCfg({"arena_extend_strategy": 1})  # kSameAsRequested: no power-of-two overshoot
            try:
                ort.create_and_register_allocator_v2("CUDAExecutionProvider", info, provider_options(flags), arena)
                _shared_arenas[flags.device_index] = True
            except Exception as error:  # noqa: BLE001 - a build without it still runs, one arena per session
                warnings.warn(f"onnxruntime could not register a shared CUDA arena ({error}); "
                              "each session keeps its own", RuntimeWarning, stacklevel=2)
                _shared_arenas[flags.device_index] = False
        return _shared_arenas[flags.device_index]


def free_cached() -> str | None:
    """Give the memory torch's allocator caches back to the device, for providers built after the
    pool dropped idle sessions (``reference.runtime.pool``); say what the device has left then."""
    if not torch.cuda.is_initialized():
        return None
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return (f"device {free / 2**20:.0f} of {total / 2**20:.0f} MiB free, this process's torch holding "
            f"{torch.cuda.memory_reserved() / 2**20:.0f} MiB")


def shared_arena_registered() -> dict[int, bool]:
    """Per device index: whether the shared arena registered (absent: no CUDA session built yet)."""
    with _lock:
        return dict(_shared_arenas)
