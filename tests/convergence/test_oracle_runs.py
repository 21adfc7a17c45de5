"""The oracle's runs of a case train once per test run, keyed by everything they are computed from."""
import copy
import dataclasses
import os
import subprocess
import sys
import types

import pytest
import torch

from ortcheck import impls
from ortcheck.convergence import cases, determinism, oracle_runs, runner
from ortcheck.convergence.curves import Curve
from ortcheck.pytest_plugin import oracle_folder

EAGER = impls.get("eager")
SETTINGS = determinism.Determinism.for_device("cpu")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def own_store(monkeypatch):
    """Each test starts from an empty store of its own, and leaves the process's as it was."""
    monkeypatch.setattr(oracle_runs, "_kept", {})
    monkeypatch.setattr(oracle_runs, "_folder", None)


def built(case, seed=0, steps=3):
    with determinism.applied(SETTINGS.with_seed(seed)):
        return case.build(), case.batches(seed, steps)


def key_of(case, model, batches, steps=3, seed=0, device="cpu", settings=SETTINGS):
    return oracle_runs.key(case, steps, seed, device, settings.to_json(), model, batches)


def counting_train(monkeypatch):
    trained = []
    train = runner.train
    monkeypatch.setattr(runner, "train", lambda *args: trained.append(args[6]) or train(*args))
    return trained


def test_a_cases_cells_train_its_oracle_once_and_get_the_curves_trained_anew(monkeypatch):
    trained = counting_train(monkeypatch)
    case = cases.get("mlp")
    first = runner.run_all(case, EAGER, steps=3)
    assert len(trained) == 5  # the implementation's run and the oracle's four
    again = runner.run_all(case, EAGER, steps=3)
    assert trained[5:] == [EAGER]  # only the implementation's side trains again
    oracle_runs.forget()
    fresh = runner.run_all(case, EAGER, steps=3)
    for run in ("eager", "exact", "nudged", "nudged_exact"):
        assert again[run].curves == first[run].curves == fresh[run].curves, run
    assert again["eager"].curves[0] is not first["eager"].curves[0]  # each caller owns its curves


def test_a_control_on_the_implementations_side_leaves_the_kept_oracle_alone(monkeypatch):
    """The gate's controls change only the implementation's side: the oracle they meet is the case's."""
    case = cases.get("mlp")
    plain = runner.run_all(case, EAGER, steps=3)
    off = runner.run_all(case, EAGER, steps=3, training=dataclasses.replace(case.training, lr=case.training.lr * 1.01))
    assert off["exact"].curves == plain["exact"].curves and off["actual"].curves != plain["actual"].curves


def test_the_recompute_and_data_parallel_cases_share_their_plain_cases_oracle():
    """Their options and ranks are the implementation's side; model, batches and training are bloom_lm's."""
    keys = {name: key_of(cases.get(name), *built(cases.get(name)))
            for name in ("bloom_lm", "bloom_lm_recompute1", "bloom_lm_recompute2", "ddp")}
    assert len(set(keys.values())) == 1, keys


def _other_forward(self, x):
    return self.net(x) * 1.0


def test_the_key_changes_with_every_input_of_the_oracle():
    case = cases.get("mlp")
    model, batches = built(case)
    base = key_of(case, model, batches)
    assert key_of(case, *built(case)) == base  # rebuilt alike: the same key

    nudged = copy.deepcopy(model)
    with torch.no_grad():
        weight = next(nudged.parameters())
        weight.view(-1)[0] = torch.nextafter(weight.view(-1)[0], torch.tensor(float("inf")))
    moved = copy.deepcopy(batches)
    moved[0][1].view(-1)[0] += 1
    frozen = copy.deepcopy(model)
    next(frozen.parameters()).requires_grad_(False)
    other_code = copy.deepcopy(model)
    other_code.__class__ = type(type(model).__name__, (type(model),), {"forward": _other_forward,
                                                                       "__qualname__": type(model).__qualname__})
    changed = {
        "a weight one ulp up": key_of(case, nudged, batches),
        "a target moved": key_of(case, model, moved),
        "a frozen parameter": key_of(case, frozen, batches),
        "another forward": key_of(case, other_code, batches),
        "steps": key_of(case, model, batches, steps=4),
        "seed": key_of(case, model, batches, seed=1),
        "device": key_of(case, model, batches, device="cuda"),
        "determinism": key_of(case, model, batches, settings=dataclasses.replace(SETTINGS, threads=SETTINGS.threads + 1)),
        "learning rate": key_of(dataclasses.replace(case, training=dataclasses.replace(case.training, lr=0.5)), model, batches),
        "loss": key_of(dataclasses.replace(case, loss=lambda out, target: ((out - target) ** 2).sum()), model, batches),
        "loss's closure": key_of(dataclasses.replace(case, loss=_scaled_loss(2.0)), model, batches),
    }
    assert key_of(dataclasses.replace(case, loss=_scaled_loss(1.0)), model, batches) != changed["loss's closure"]
    assert base not in changed.values() and len(set(changed.values())) == len(changed), changed


def _scaled_loss(scale):
    return lambda out, target: scale * ((out - target) ** 2).mean()


def test_the_key_is_the_same_in_another_process_with_other_hash_seeds():
    script = ("from tests.convergence.test_oracle_runs import built, key_of; from ortcheck.convergence import cases; "
              "case = cases.get('bloom_lm'); print(key_of(case, *built(case)))")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": REPO}
    other = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    case = cases.get("bloom_lm")
    assert other.stdout.strip().splitlines()[-1] == key_of(case, *built(case))


def test_a_run_kept_in_the_folder_serves_another_process_and_is_written_whole(tmp_path):
    oracle_runs.share_in(tmp_path)
    curve = Curve(0, {"loss": [1.0, float("nan")], "grad_norm": [2.0, 3.0], "lr": [0.1, 0.1]})
    assert oracle_runs.curve("k", "exact", lambda: curve).metrics["grad_norm"] == [2.0, 3.0]
    assert [p.name for p in tmp_path.iterdir()] == ["k-exact.pickle"]  # no temporary left behind
    oracle_runs.forget()  # as another process sees it: the folder only

    def untrained():
        raise AssertionError("trained again")

    assert repr(oracle_runs.curve("k", "exact", untrained)) == repr(curve)  # NaN included
    assert oracle_runs.curve("k", "eager", lambda: curve) is not None  # another run of the key trains


def test_the_controller_names_one_folder_to_every_worker_and_removes_it(monkeypatch):
    controller = types.SimpleNamespace(option=types.SimpleNamespace(numprocesses=2), pluginmanager=_Plugins())
    oracle_folder.configure(controller)
    (owner,) = controller.pluginmanager.registered
    nodes = [types.SimpleNamespace(workerinput={}) for _ in range(2)]
    for node in nodes:
        owner.pytest_configure_node(node)
    assert {node.workerinput[oracle_folder.FOLDER_KEY] for node in nodes} == {str(owner.folder)}
    worker = types.SimpleNamespace(option=types.SimpleNamespace(numprocesses=2), workerinput=nodes[0].workerinput)
    oracle_folder.configure(worker)
    assert oracle_runs._folder == owner.folder
    alone = types.SimpleNamespace(option=types.SimpleNamespace(numprocesses=None))
    oracle_folder.configure(alone)
    assert oracle_runs._folder is None  # pytest alone: its own memory
    owner.pytest_unconfigure(controller)
    assert not owner.folder.exists()


class _Plugins:
    def __init__(self):
        self.registered = []

    def register(self, plugin, name):
        self.registered.append(plugin)
