"""At most ``pool.limit(device)`` onnxruntime sessions live per process; the least recently run go
first and come back when run again. Sessions over the same graph share one; one no Session holds
stays idle, within the device's idle bounds, for the next Session over that graph."""
import gc
import itertools

import pytest
import torch
from onnx import TensorProto, helper

from reference.runtime import Session, pool


_names = itertools.count()


def identity_model(name: str | None = None):
    """An Identity graph; a new graph (its own bytes) at each call unless ``name`` is given."""
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)  # noqa: E731
    name = f"identity{next(_names)}" if name is None else name
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], name, [value("x")], [value("y")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


@pytest.fixture
def small_pool(monkeypatch):
    monkeypatch.setitem(pool.LIMITS, "cpu", 3)
    gc.collect()
    pool.drop_idle("cpu")  # none left over from earlier tests


def test_live_sessions_stay_within_the_limit_and_evicted_ones_still_run(small_pool):
    sessions = [Session(identity_model()) for _ in range(8)]
    assert pool.live("cpu") <= 3
    x = torch.randn(5)
    for session in sessions:  # each run re-creates an evicted one
        (y,) = session.run([x])
        assert torch.equal(y, x)
        assert pool.live("cpu") <= 3


def test_the_most_recently_run_session_is_kept(small_pool):
    first, *others = [Session(identity_model()) for _ in range(3)]
    kept = first.inference_session
    first.run([torch.ones(1)])
    Session(identity_model())  # one over the limit: the least recently run goes
    assert first.inference_session is kept


def test_sessions_over_the_same_graph_share_one_and_other_options_do_not():
    model = identity_model("shared")
    first, second = Session(model), Session(identity_model("shared"))
    assert first.inference_session is second.inference_session
    assert Session(model, arena=False).inference_session is not first.inference_session
    assert Session(identity_model("other")).inference_session is not first.inference_session
    assert torch.equal(second.run([torch.ones(3)])[0], torch.ones(3))


def test_a_session_no_session_holds_stays_idle_and_serves_the_next_over_its_graph(small_pool):
    session = Session(identity_model("again"))
    kept = session.inference_session
    assert (pool.live("cpu"), pool.idle("cpu")) == (1, 0)
    del session
    gc.collect()
    assert (pool.live("cpu"), pool.idle("cpu")) == (1, 1)
    again = Session(identity_model("again"))
    assert again.inference_session is kept and pool.idle("cpu") == 0


@pytest.mark.parametrize("bound", ["count", "bytes"])
def test_idle_sessions_beyond_the_bounds_go_least_recently_run_first(small_pool, monkeypatch, bound):
    size = len(identity_model("x0").SerializeToString())
    monkeypatch.setitem(pool.IDLE_LIMITS, "cpu", 2 if bound == "count" else 100)
    monkeypatch.setitem(pool.IDLE_BYTES, "cpu", 10 * size if bound == "count" else 2 * size)
    sessions = [Session(identity_model(f"x{i}")) for i in range(3)]
    sessions[0].run([torch.ones(1)])  # the most recently run
    kept = sessions[0].inference_session
    del sessions
    gc.collect()
    assert (pool.live("cpu"), pool.idle("cpu")) == (2, 2)
    assert Session(identity_model("x0")).inference_session is kept


def test_a_held_session_is_never_dropped_as_idle(small_pool, monkeypatch):
    monkeypatch.setitem(pool.IDLE_LIMITS, "cpu", 0)
    held = [Session(identity_model()) for _ in range(3)]
    assert (pool.live("cpu"), pool.idle("cpu")) == (3, 0)
    held.pop()
    gc.collect()
    assert (pool.live("cpu"), pool.idle("cpu")) == (2, 0)


def test_on_cuda_a_session_goes_with_the_last_session_over_its_graph():
    """A CUDA provider holds handles and device memory: none is kept idle (the pool alone, no device)."""
    class Holder:
        pass

    holders, content = [Holder(), Holder()], ("graph digest", True)
    for index in range(2):  # (a loop variable would hold the last one)
        pool.hold(holders[index], "cuda", content, 10)
    created = []
    session = pool.get("cuda", (content, "flags"), lambda: created.append(1) or object())
    assert pool.get("cuda", (content, "flags"), lambda: created.append(1) or object()) is session and created == [1]
    before = pool.live("cuda")
    holders.pop()
    gc.collect()
    assert pool.live("cuda") == before
    holders.pop()
    gc.collect()
    assert pool.live("cuda") == before - 1


class OutOfHandles(RuntimeError):
    pass


@pytest.fixture
def freed():
    """What the pool's drop hook for the CPU was called with."""
    calls = []
    before = pool.on_drop("cpu", lambda: calls.append(True) or "12 MiB left")
    yield calls
    pool.on_drop("cpu", before)


def test_a_build_out_of_device_resources_is_retried_once_after_dropping_idle_sessions(small_pool, freed):
    idle = [Session(identity_model()) for _ in range(3)]
    assert pool.live("cpu") == 3
    attempts = []

    def create():
        attempts.append(pool.live("cpu"))
        if len(attempts) == 1:
            raise OutOfHandles("CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; expr=cublasCreate(&cublas_handle_)")
        return "a session"

    before = pool.retries["cpu"]
    assert pool.get("cpu", ("new",), create) == "a session"
    assert attempts == [3, 0], "the second build must come after every idle session was dropped"
    assert freed == [True] and pool.retries["cpu"] == before + 1
    assert pool.live("cpu") == 1
    for session in idle:  # dropped sessions come back when run
        assert torch.equal(session.run([torch.ones(2)])[0], torch.ones(2))


def test_a_build_failing_for_another_reason_is_not_retried(small_pool):
    kept = Session(identity_model())  # noqa: F841 - held: a collected Session takes its session along
    calls = []

    def create():
        calls.append(1)
        raise ValueError("Type Error: Type (tensor(int64)) of input parameter (x) of operator (Relu) is invalid")

    with pytest.raises(ValueError, match="Type Error"):
        pool.get("cpu", ("bad",), create)
    assert calls == [1] and pool.live("cpu") == 1


def test_a_build_failing_again_says_what_was_dropped_and_what_is_left(small_pool, freed):
    kept = Session(identity_model())  # noqa: F841

    def create():
        raise OutOfHandles("CUDA failure 2: out of memory")

    with pytest.raises(OutOfHandles, match=r"out of memory \(also after dropping 1 idle cpu sessions; 12 MiB left\)"):
        pool.get("cpu", ("never",), create)
    assert freed == [True]


@pytest.mark.parametrize("error, resources", [
    ("CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=x ; expr=cublasCreate(&cublas_handle_);", True),
    ("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : CUDA failure 2: out of memory", True),
    ("CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR / CUDNN_STATUS_ALLOC_FAILED", True),
    ("Failed to allocate memory for requested buffer of size 4194304", True),
    ("CUDA error cudaErrorInvalidValue: invalid argument", False),
    ("Could not find an implementation for MatMul(13) node with name ''", False),
])
def test_which_errors_mean_the_device_ran_out(error, resources):
    assert pool.out_of_resources(RuntimeError(error)) is resources


@pytest.mark.parametrize("value, limit", [("", 64), ("12", 12), (" 200 ", 200)])
def test_the_cuda_bound_comes_from_the_environment(monkeypatch, value, limit):
    monkeypatch.setenv("REFERENCE_CUDA_SESSIONS", value)
    assert pool.limits_from_environment()["cuda"] == limit


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_cuda_bound_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("REFERENCE_CUDA_SESSIONS", value)
    with pytest.raises(ValueError, match=f"REFERENCE_CUDA_SESSIONS={value!r}: expected a number of sessions"):
        pool.limits_from_environment()


@pytest.mark.parametrize("value, idle", [("0", 0), (" 7 ", 7)])
def test_the_idle_bound_comes_from_the_environment(monkeypatch, value, idle):
    monkeypatch.setenv("REFERENCE_IDLE_SESSIONS", value)
    assert pool.idle_limits_from_environment() == {"cpu": idle, "cuda": 0}


def test_by_default_idle_sessions_take_an_eighth_of_a_cores_share_of_memory(monkeypatch):
    monkeypatch.delenv("REFERENCE_IDLE_SESSIONS", raising=False)
    monkeypatch.setattr(pool.os, "cpu_count", lambda: 64)
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": (64 << 30) // 4096}  # 64 GiB, 64 cores: 1 GiB a core
    monkeypatch.setattr(pool.os, "sysconf", pages.__getitem__)
    assert pool.idle_limits_from_environment() == {"cpu": (1 << 30) // 8 // pool.SESSION_MEMORY, "cuda": 0}
    pages["SC_PHYS_PAGES"] *= 64
    assert pool.idle_limits_from_environment()["cpu"] == 128


@pytest.mark.parametrize("value", ["-1", "some"])
def test_a_bad_idle_bound_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("REFERENCE_IDLE_SESSIONS", value)
    with pytest.raises(ValueError, match=f"REFERENCE_IDLE_SESSIONS={value!r}: expected a number of idle sessions"):
        pool.idle_limits_from_environment()


def test_a_session_is_shared_only_under_the_thread_budget_it_was_built_on(monkeypatch):
    """(The build under the other budget is faked: a real one would size onnxruntime's global pool for
    the rest of the process.)"""
    first = Session(identity_model("budget"))
    shared, threads = first.inference_session, torch.get_num_threads()
    monkeypatch.setattr(Session, "_create_cpu", lambda self: ("built under", torch.get_num_threads()))
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads + 1)
    assert first.inference_session == ("built under", threads + 1)
    monkeypatch.undo()
    assert first.inference_session is shared and Session(identity_model("budget")).inference_session is shared
