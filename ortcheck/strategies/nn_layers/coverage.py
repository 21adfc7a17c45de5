"""Which of the installed torch's ``torch.nn`` layers the catalogue covers, and why the rest are not
layers to check: the coverage is measured against torch itself, not against a list of our own
(``tests/strategies/test_nn_coverage.py`` fails on a torch that adds a layer until it is covered).

A class is covered when some catalogue entry builds it (also nested: ``TransformerEncoder`` builds
its layer). ``Lazy*`` classes are excluded when their eager twin is covered: they infer their sizes
at the first call and are that twin from then on.
"""
from __future__ import annotations

from typing import Iterator

from hypothesis import HealthCheck, Phase, find, settings
from torch import nn

from .drawn import Build, Example

_CONTAINER = "a container: what it holds is checked (suites/test_grad_parity.py composes layer stacks)"

EXCLUDED: dict[str, str] = {
    "Module": "the base class of every layer",
    "Container": "the deprecated base of the containers",
    "Sequential": _CONTAINER, "ModuleList": _CONTAINER, "ModuleDict": _CONTAINER,
    "ParameterList": _CONTAINER, "ParameterDict": _CONTAINER,
    "RNNBase": "the base of RNN, LSTM and GRU, each in the catalogue",
    "RNNCellBase": "the base of RNNCell, LSTMCell and GRUCell, each in the catalogue",
    "SyncBatchNorm": "BatchNorm synchronized across DDP ranks on CUDA: it refuses to run without a process group, "
                     "BatchNorm is in the catalogue and DDP has suites/test_ddp.py",
    "DataParallel": "a single-process multi-GPU wrapper, not a layer (torch recommends DDP: suites/test_ddp.py)",
    "NLLLoss2d": "a deprecated alias of NLLLoss (in the catalogue)",
    "FractionalMaxPool2d": "pools regions drawn at random from torch's generator at every call: no pipeline "
                           "can draw the same ones, and no ONNX op draws them",
    "FractionalMaxPool3d": "pools regions drawn at random from torch's generator at every call: no pipeline "
                           "can draw the same ones, and no ONNX op draws them",
}


def public_layers() -> dict[str, type]:
    """Every public ``nn.Module`` subclass ``torch.nn`` exports in this torch."""
    return {name: value for name, value in vars(nn).items()
            if isinstance(value, type) and issubclass(value, nn.Module) and not name.startswith("_")}


def built_classes(example: Example) -> set[type]:
    """The classes an example constructs, nested constructor calls included."""
    found: set[type] = set()

    def walk(value) -> None:
        if isinstance(value, Build):
            found.add(value.cls)
            for argument in (*value.args, *(v for _, v in value.kwargs)):
                walk(argument)

    walk(example.module)
    return found


def first_example(strategy) -> Example:
    """A first example of a catalogue entry (which classes it builds does not depend on the draw)."""
    return find(strategy, lambda _: True, settings=settings(database=None, max_examples=1, phases=[Phase.generate],
                                                            suppress_health_check=list(HealthCheck)))


def lazy_twins(layers: dict[str, type], covered: set[type]) -> Iterator[tuple[str, str]]:
    """``(LazyX, reason)`` for each lazy layer whose eager twin ``X`` is covered."""
    for name in layers:
        twin = layers.get(name.removeprefix("Lazy")) if name.startswith("Lazy") else None
        if twin is not None and twin in covered:
            yield name, f"infers its sizes at the first call, then is {twin.__name__} (in the catalogue)"
