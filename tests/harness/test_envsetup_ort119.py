"""ortcheck.envsetup.ort119 on a CUDA build: the CUDA extensions need a toolkit of torch's CUDA major,
said before the build rather than as a compiler error in the middle of it (runs on the CPU: pure functions)."""
from ortcheck.envsetup.ort119 import nvcc_release, toolkit_problem

CUDA_STATE = {"torch_cuda": "12.1", "ort_cuda": "11.8", "cuda_names": ["fused_ops", "torch_gpu_allocator"],
              "missing": {"torch_gpu_allocator": "ModuleNotFoundError", "aten_op_executor": "ModuleNotFoundError"},
              "cuda_home": "/usr/local/cuda"}


def test_a_cpu_build_or_built_cuda_extensions_need_no_toolkit():
    assert toolkit_problem({"torch_cuda": "12.1", "cuda_names": [], "missing": {"aten_op_executor": "x"}}, None) is None
    assert toolkit_problem({**CUDA_STATE, "missing": {"aten_op_executor": "x"}}, None) is None


def test_the_toolkit_must_be_torchs_cuda_major_not_onnxruntimes():
    assert toolkit_problem(CUDA_STATE, "12.4") is None  # a minor difference only warns in torch
    problem = toolkit_problem(CUDA_STATE, "11.8")
    assert "CUDA 12.x toolkit" in problem and "nvcc 11.8" in problem and "torch_gpu_allocator" in problem
    assert "aten_op_executor" not in problem


def test_a_missing_toolkit_is_named():
    assert "set CUDA_HOME" in toolkit_problem({**CUDA_STATE, "cuda_home": None}, None)
    assert "no working bin/nvcc" in toolkit_problem(CUDA_STATE, None)
    assert nvcc_release(None) is None and nvcc_release("/nonexistent") is None
