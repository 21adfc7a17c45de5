"""ORTModule 1.19.2's memory-optimizer report, read from its own objects (docs/ortmodule-1.19.2.md).

Where it lives: the training manager's ``_runtime_inspector.memory_ob`` holds one summary per plan
(``cluster_id_combination_to_saving_symbolics_map``: config string -> frequency, symbolic and
evaluated saving), filled during the first training forward. ON/OFF is stored nowhere: ORTModule's
own table computes it from the config file in use (at levels 1/2 a temporary file listing every plan
of the level), a plan being ON when each of its ``name:strategy`` parts is listed with a count
other than 0; we apply the same rule. Applied counts exist only in the C++ "MemoryInsight" table, and
only a session built on the graph *before* recompute reports them truthfully (the live session's
graph already holds the recomputed nodes), so reading them builds one throw-away session.
"""
from __future__ import annotations

import json
import re

from ortcheck.impls.base import MemoryPlan, MemoryPlans

_OPTION = re.compile(r">>Option \d+\s*: (Recompute(?: with compromise)?) subgraph (\S+)")
_STATUS = re.compile(r"Status\s*: Enabled, requested count=(-?\d+), actual applied count=(\d+)")


def read(ort_module) -> MemoryPlans | None:
    manager = ort_module._torch_module._execution_manager(True)
    observer = getattr(getattr(manager, "_runtime_inspector", None), "memory_ob", None)
    summaries = getattr(observer, "cluster_id_combination_to_saving_symbolics_map", None)
    if not summaries or getattr(manager, "_onnx_models", None) is None or manager._onnx_models.optimized_model is None:
        return None
    options = manager._runtime_options
    enabled = _enabled_parts(options.memory_optimizer_config_file_path)
    applied = _applied_counts(manager)
    plans = []
    for cluster, summary in summaries.items():
        parts = [":".join(part.split(":")[:2]) for part in cluster.split(",")]
        name, strategy = parts[0].split(":")
        saving = summary.evaluated_saving
        plans.append(MemoryPlan(name, int(strategy), all(part in enabled for part in parts), summary.freq,
                                applied.get(parts[0], 0), int(saving) if isinstance(saving, (int, float)) else None,
                                str(summary.simplified_symbolic_saving_expr)))
    table = "\n".join(f"{'ON ' if p.enabled else 'OFF'} {p.name}:{p.strategy}  freq {p.freq}  applied {p.applied}  "
                      f"max saving {p.saving_bytes}  symbolic {p.saving_symbolic}" for p in plans)
    return MemoryPlans(tuple(plans), f"ORTModule memory optimizer, level {int(options.memory_optimization_level)}:\n{table}")


def _enabled_parts(path: str) -> set[str]:
    if not path:
        return set()
    with open(path) as handle:
        entries = [entry for item in json.load(handle) for entry in str(item).split(",") if entry]
    enabled = set()
    for entry in entries:
        fields = entry.split(":")
        if len(fields) == 3 and fields[2].lstrip("-").isdigit() and int(fields[2]) != 0:
            enabled.add(":".join(fields[:2]))
    return enabled


def _applied_counts(manager) -> dict[str, int]:
    """``name:strategy`` -> "actual applied count" summed over the C++ table's rows for that plan."""
    options = manager._runtime_options
    agent = _fresh_agent(manager)
    table, _ = agent.get_serialized_ortmodule_memory_stat(options.memory_optimizer_config_file_path,
                                                          options.recompute_probe_config, True)
    counts, current = {}, None
    for line in table.splitlines():
        if option := _OPTION.search(line):
            current = f"{option.group(2)}:{2 if 'compromise' in option.group(1) else 1}"
            counts.setdefault(current, 0)
        elif (status := _STATUS.search(line)) and current:
            counts[current] += int(status.group(2))
    return counts


def _fresh_agent(manager):
    """A training agent on the graph before recompute, built like ORTModule builds its own probe."""
    from onnxruntime.capi import _pybind_state as C
    from onnxruntime.capi.onnxruntime_inference_collection import get_ort_device_type
    from onnxruntime.training.ortmodule import _utils
    from onnxruntime.training.ortmodule._execution_agent import TrainingAgent

    session_options, providers, provider_options = manager._get_session_config()
    model = manager._onnx_models.optimized_model
    device = manager._device
    info = C.OrtDevice(get_ort_device_type(device.type, device.index), C.OrtDevice.default_memory(),
                       _utils.get_device_index(device))
    forward_outputs = len(manager._graph_info.user_output_names) + len(manager._graph_info.frontier_node_arg_map)
    backward_fetches = [output.name for output in model.graph.output]
    return TrainingAgent(model.SerializeToString(), [i.name for i in model.graph.input], [info] * forward_outputs,
                         backward_fetches, [info] * len(backward_fetches), session_options, providers,
                         provider_options, _utils.get_device_index(device))
