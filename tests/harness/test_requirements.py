"""The pinned environments stay in step: the GPU job's stack is the modern one with onnxruntime's CUDA build."""
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"


def _pins(name: str) -> dict[str, str]:
    lines = [line.split("#")[0].strip() for line in (REQUIREMENTS / name).read_text().splitlines()]
    pins = dict(line.split("==") for line in lines if line)
    return {name.split("[")[0]: version for name, version in pins.items()}  # extras: the same distribution


def test_the_gpu_stack_is_the_modern_one_with_onnxruntime_gpu():
    modern, gpu = _pins("modern.txt"), _pins("gpu.txt")
    assert gpu.pop("onnxruntime-gpu") == modern.pop("onnxruntime")
    assert gpu == modern
