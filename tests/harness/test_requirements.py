"""The pinned environments stay in step: the GPU job's stack is the modern one with onnxruntime's CUDA build."""
import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"


def _pins(name: str) -> dict[str, str]:
    """distribution name -> its version specifier ("==2.4.1", "<75"); extras name the same distribution."""
    lines = [line.split("#")[0].strip() for line in (REQUIREMENTS / name).read_text().splitlines()]
    pins = [re.fullmatch(r"([A-Za-z0-9._-]+)(\[[A-Za-z0-9_,-]+\])?\s*([=<>!~].*)", line) for line in lines if line]
    assert all(pins), f"{name}: a line that is not 'name[extras] specifier'"
    return {pin[1]: pin[3] for pin in pins}


def test_the_gpu_stack_is_the_modern_one_with_onnxruntime_gpu():
    modern, gpu = _pins("modern.txt"), _pins("gpu.txt")
    assert gpu.pop("onnxruntime-gpu") == modern.pop("onnxruntime")
    assert gpu == modern


def test_the_ort119_gpu_stack_is_the_ort119_one_with_onnxruntime_training_cuda():
    """ort119-gpu.txt = ort119.txt with onnxruntime-training's CUDA build and the CUDA 11 libraries of its
    provider (requirements/ort119-gpu.txt says why; tests/harness/test_gpu_pins.py checks the CUDA majors)."""
    ort119, gpu = _pins("ort119.txt"), _pins("ort119-gpu.txt")
    assert gpu.pop("onnxruntime-training") == ort119.pop("onnxruntime-training-cpu")
    cuda11 = {name for name in gpu if name.startswith("nvidia-") and name.endswith("-cu11")}
    assert cuda11 == {"nvidia-cuda-runtime-cu11", "nvidia-cublas-cu11", "nvidia-cudnn-cu11", "nvidia-cufft-cu11"}
    assert {name: version for name, version in gpu.items() if name not in cuda11} == ort119
