"""At most ``pool.limit(device)`` onnxruntime sessions live per process; the least recently run go
first and come back when run again; a Session's own go with it."""
import gc

import pytest
import torch
from onnx import TensorProto, helper

from reference.runtime import Session, pool


def identity_model(dtype=None):
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [value("x")], [value("y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


@pytest.fixture
def small_pool(monkeypatch):
    monkeypatch.setitem(pool.LIMITS, "cpu", 3)
    gc.collect()


def test_live_sessions_stay_within_the_limit_and_evicted_ones_still_run(small_pool):
    sessions = [Session(identity_model(torch.float32)) for _ in range(8)]
    assert pool.live("cpu") <= 3
    x = torch.randn(5)
    for session in sessions:  # each run re-creates an evicted one
        (y,) = session.run([x])
        assert torch.equal(y, x)
        assert pool.live("cpu") <= 3


def test_the_most_recently_run_session_is_kept(small_pool):
    first, *others = [Session(identity_model(torch.float32)) for _ in range(3)]
    kept = first.inference_session
    first.run([torch.ones(1)])
    Session(identity_model(torch.float32))  # one over the limit: the least recently run goes
    assert first.inference_session is kept


def test_a_sessions_onnxruntime_session_goes_with_it():
    before = pool.live("cpu")
    session = Session(identity_model(torch.float32))
    assert pool.live("cpu") == before + 1
    del session
    gc.collect()
    assert pool.live("cpu") == before
