"""Helpers of the autodiff tests, handed to them as the ``harness`` fixture: export a module with its
parameters as graph inputs, build the gradient graphs, run them in onnxruntime and compare against
PyTorch autograd. (The real runtime lives elsewhere; a fixture keeps this working under any import mode.)"""
from __future__ import annotations

import io
import types
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import helper

from ortcheck.checks.one_op import OneOp  # a plain function as a module, so functions export like layers
from reference.autodiff import GradientGraphs, build_gradient_graphs
from reference.runtime import threads


@dataclass
class Exported:
    model: onnx.ModelProto
    input_names: list[str]  # one per positional argument
    output_names: list[str]
    param_names: list[str]


def export(module: torch.nn.Module, args: Sequence[torch.Tensor], dynamic: bool = True) -> Exported:
    """TorchScript export in training mode; parameter initializers stripped so they are plain inputs."""
    module = module if isinstance(module, torch.nn.Module) else OneOp(module)
    input_names = [f"in{i}" for i in range(len(args))]
    with torch.no_grad():
        outputs = module(*args)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    output_names = [f"out{i}" for i in range(len(outputs))]
    axes = {name: list(range(t.dim())) for name, t in zip(input_names + output_names, [*args, *outputs])}
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, tuple(args), buffer, dynamo=False, training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False, input_names=input_names, output_names=output_names,
            dynamic_axes=axes if dynamic else None, export_params=True, keep_initializers_as_inputs=True,
        )
    model = onnx.load_from_string(buffer.getvalue())
    params = [name for name, _ in module.named_parameters()]
    kept = [t for t in model.graph.initializer if t.name not in set(params)]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    graph_inputs = {value.name for value in model.graph.input}
    return Exported(model, input_names, output_names, [p for p in params if p in graph_inputs])


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = threads.configure(ort.SessionOptions())  # the process's pool once the reference made one
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


@dataclass
class Run:
    outputs: list[np.ndarray]  # model outputs of the ORT forward graph
    stash: dict[str, np.ndarray]
    grads: dict[str, np.ndarray | None]  # input/param name -> ORT gradient


class GradientRunner:
    """Forward and backward sessions of one exported module, runnable on any input sizes."""

    def __init__(self, module: torch.nn.Module, args: Sequence[torch.Tensor], wrt_args: Sequence[int] = (),
                 dynamic: bool = True, params: bool = True):
        self.module = module if isinstance(module, torch.nn.Module) else OneOp(module)
        self.exported = export(self.module, args, dynamic)
        self.wrt_args = list(wrt_args)
        wrt = [self.exported.input_names[i] for i in self.wrt_args] + (self.exported.param_names if params else [])
        self.graphs: GradientGraphs = build_gradient_graphs(self.exported.model, wrt)
        onnx.checker.check_model(self.graphs.forward)
        onnx.checker.check_model(self.graphs.backward)
        self.forward_session = session(self.graphs.forward)
        self.backward_session = session(self.graphs.backward)

    def feeds(self, args: Sequence[torch.Tensor]) -> dict[str, np.ndarray]:
        named = dict(zip(self.exported.input_names, args))
        named.update((name, p.detach()) for name, p in self.module.named_parameters())
        graph_inputs = {value.name for value in self.graphs.forward.graph.input}
        return {name: t.detach().numpy() for name, t in named.items() if name in graph_inputs}

    def run(self, args: Sequence[torch.Tensor], output_grads: Sequence[np.ndarray]) -> Run:
        feeds = self.feeds(args)
        results = self.forward_session.run(None, feeds)
        n_outputs = len(self.exported.output_names)
        stash = dict(zip(self.graphs.stashed, results[n_outputs:]))
        backward_feeds = dict(zip(self.graphs.output_grad_names, output_grads))
        backward_feeds.update((name, feeds[name]) for name in self.graphs.forward_inputs_needed)
        backward_feeds.update(stash)
        produced = dict(zip([o.name for o in self.backward_session.get_outputs()],
                            self.backward_session.run(None, backward_feeds)))
        grads = {name: produced[g] if g else None for name, g in self.graphs.input_grads.items()}
        return Run(results[:n_outputs], stash, grads)


def torch_gradients(module: torch.nn.Module, args: Sequence[torch.Tensor], wrt_args: Sequence[int],
                    output_grads: Callable[[list[torch.Tensor]], list[torch.Tensor]], input_names: list[str]):
    """Eager outputs and gradients, keyed like ``Run.grads`` (input names, then parameter names)."""
    args = [a.detach().clone().requires_grad_(i in wrt_args) for i, a in enumerate(args)]
    outputs = module(*args)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    float_outputs = [o for o in outputs if o.is_floating_point()]
    wrt = {input_names[i]: args[i] for i in wrt_args} | dict(module.named_parameters())
    seeds = output_grads(float_outputs)
    grads = torch.autograd.grad(float_outputs, list(wrt.values()), seeds, allow_unused=True)
    return outputs, seeds, dict(zip(wrt, grads))


def check_gradients(module, args: Sequence[torch.Tensor], wrt_args: Sequence[int] = (0,), *,
                    more_args: Sequence[Sequence[torch.Tensor]] = (), dynamic: bool = True,
                    seed: int = 0, **tolerances) -> GradientRunner:
    """Every requested gradient from the ONNX graphs matches PyTorch autograd, at the export sizes
    and at each ``more_args`` (other sizes, same ranks: nothing may be baked into the graphs)."""
    runner = GradientRunner(module, args, wrt_args, dynamic)
    generator = torch.Generator().manual_seed(seed)

    def random_seeds(outputs):
        return [torch.randn(o.shape, generator=generator, dtype=o.dtype) for o in outputs]

    for sample in [args, *more_args]:
        outputs, seeds, expected = torch_gradients(runner.module, sample, wrt_args, random_seeds,
                                                   runner.exported.input_names)
        run = runner.run(sample, [s.numpy() for s in seeds])
        for got, want in zip(run.outputs, outputs):
            torch.testing.assert_close(torch.from_numpy(np.asarray(got)), want.detach(), **tolerances)
        assert set(run.grads) == set(expected)
        for name, want in expected.items():
            got = run.grads[name]
            if got is None:
                assert want is None or not want.any(), f"no gradient built for {name}"
                continue
            assert want is not None, f"gradient built for {name}, which has no path to the outputs"
            torch.testing.assert_close(torch.from_numpy(got), want, msg=lambda m, n=name: f"d/d{n}: {m}",
                                       **tolerances)
    return runner


def run_gradient_graphs(graphs: GradientGraphs, feeds: dict[str, np.ndarray],
                        output_grads: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict[str, np.ndarray | None]]:
    """Run built graphs on ``feeds``: (forward outputs incl. stash, gradient per requested input)."""
    results = session(graphs.forward).run(None, feeds)
    n_outputs = len(results) - len(graphs.stashed)
    backward_feeds = dict(zip(graphs.output_grad_names, output_grads))
    backward_feeds.update(zip(graphs.stashed, results[n_outputs:]))
    backward_feeds.update((name, feeds[name]) for name in graphs.forward_inputs_needed)
    backward = session(graphs.backward)
    produced = dict(zip([o.name for o in backward.get_outputs()], backward.run(None, backward_feeds)))
    return results, {name: produced[g] if g else None for name, g in graphs.input_grads.items()}


def make_model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    """A hand-built opset-20 model; ``inputs``/``outputs`` are (name, elem_type, shape) triples."""
    graph = helper.make_graph(
        nodes, "handmade", [helper.make_tensor_value_info(*spec) for spec in inputs],
        [helper.make_tensor_value_info(*spec) for spec in outputs], initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)


def op_types(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


@pytest.fixture(scope="session")
def harness():
    """The helpers above, called as ``harness.check_gradients(...)``."""
    return types.SimpleNamespace(
        export=export, GradientRunner=GradientRunner, check_gradients=check_gradients,
        run_gradient_graphs=run_gradient_graphs, make_model=make_model, op_types=op_types,
    )
