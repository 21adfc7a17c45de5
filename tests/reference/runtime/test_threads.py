"""One thread budget per process: however many sessions a process holds, onnxruntime adds at most
one pool of torch's thread count, and none at one thread (reference/runtime/threads.py)."""
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import os, sys, torch
    from onnx import TensorProto, helper
    torch.set_num_threads(int(sys.argv[1]))
    from reference.runtime import Session, pool
    threads = lambda: len(os.listdir("/proc/self/task"))
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
    graph = lambda name: helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], name, [value("x")], [value("y")])
    model = lambda name="relu": helper.make_model(graph(name), opset_imports=[helper.make_opsetid("", 20)], ir_version=10)
    before = threads()
    sessions = [Session(model(f"relu{i}")) for i in range(300)]  # 300 graphs: one graph's Sessions share a session
    for session in sessions:
        session.run([torch.randn(4096)])
    print(before, threads(), pool.live("cpu"))
""")


@pytest.mark.parametrize("torch_threads", [1, 4])
def test_three_hundred_sessions_add_at_most_one_pool_of_torchs_thread_count(torch_threads):
    result = subprocess.run([sys.executable, "-c", PROGRAM, str(torch_threads)], capture_output=True, text=True,
                            timeout=300, check=True)
    before, after, live = map(int, result.stdout.split())
    assert live >= 300
    # the global pool: torch_threads - 1 workers (the caller computes too), none at one thread
    assert after - before <= torch_threads - 1, f"{after - before} threads added by 300 sessions"


def test_once_the_global_pool_exists_one_thread_sessions_use_it_too():
    """onnxruntime refuses a session with threads of its own once a global pool exists: a process
    whose torch went from several threads to one (the convergence runner pins one) still builds."""
    three_hundred = 'sessions = [Session(model(f"relu{i}")) for i in range(300)]'
    assert three_hundred in PROGRAM
    program = PROGRAM.replace(three_hundred,
                              "sessions = [Session(model())]; torch.set_num_threads(1); sessions += [Session(model(str(i))) for i in range(3)]")
    result = subprocess.run([sys.executable, "-c", program, "3"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
