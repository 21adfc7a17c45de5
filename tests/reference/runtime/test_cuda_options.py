"""The CUDA provider's options as a pure function of torch's flags: checked without a GPU."""
import itertools

import pytest

from reference.runtime.cuda import TorchFlags, provider_options


def flags(matmul_tf32=False, cudnn_tf32=True, det=False, device=0, stream=1234):
    return TorchFlags(matmul_tf32, cudnn_tf32, det, device, stream)


@pytest.mark.parametrize("matmul_tf32, cudnn_tf32", list(itertools.product([False, True], repeat=2)))
def test_tf32_only_where_torch_allows_it_for_products_and_convolutions(matmul_tf32, cudnn_tf32):
    """torch's defaults (products float32, convolutions TF32) give float32 everywhere: one provider
    flag covers both, and a pipeline must never be less accurate than eager."""
    expected = "1" if matmul_tf32 and cudnn_tf32 else "0"
    assert provider_options(flags(matmul_tf32, cudnn_tf32))["use_tf32"] == expected


def test_convolution_algorithms_follow_torchs_determinism():
    assert provider_options(flags(det=False))["cudnn_conv_algo_search"] == "HEURISTIC"
    assert provider_options(flags(det=True))["cudnn_conv_algo_search"] == "DEFAULT"


def test_sessions_run_on_torchs_stream_and_device():
    options = provider_options(flags(device=3, stream=987654321))
    assert options["has_user_compute_stream"] == "1"
    assert options["user_compute_stream"] == "987654321"
    assert options["device_id"] == "3"


def test_options_are_strings_as_onnxruntime_takes_them():
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in provider_options(flags()).items())


def test_convolution_workspaces_stay_small():
    assert provider_options(flags())["cudnn_conv_use_max_workspace"] == "0"
