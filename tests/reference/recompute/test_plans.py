"""Plans: traced through the allow-list of the level, named by op types, bounded by layer inputs."""
from reference.recompute import optimize
from reference.recompute.graph import ForwardFacts
from reference.recompute.plans import COMPROMISE, find_plans, layer_inputs


def names(plans):
    return {(plan.name, plan.strategy): len(plan.occurrences) for plan in plans}


def test_level_0_traces_only_the_base_allow_list(bloom):
    # Softmax, LayerNormalization and MatMul are level-1 ops: their outputs have no level-0 plan
    assert names(find_plans(ForwardFacts(bloom.graphs), 0)) == {("Gelu+", 1): 2, ("Dropout+", 1): 2, ("Gather+", 1): 1}


def test_level_1_traces_heavier_ops_and_stops_at_layer_inputs(bloom):
    plans = names(find_plans(ForwardFacts(bloom.graphs), 1))
    assert plans[("MatMul+Div+Where+Softmax+", 1)] == 2  # one per attention
    assert plans[("LayerNormalization+", 1)] == 5  # 6 LayerNorms, less the one producing layer 0's input
    assert all(strategy == 1 for _, strategy in plans)


def test_layer_inputs_are_the_inputs_of_pre_ln_attention_layers(bloom):
    found = layer_inputs(ForwardFacts(bloom.graphs))
    assert found == {"/module/word_embeddings_layernorm/LayerNormalization_output_0",
                     "/module/layers/layers.0/layers.0.1/Add_output_0"}


def test_names_list_op_types_in_topological_order_each_followed_by_plus(bloom):
    facts = ForwardFacts(bloom.graphs)
    for plan in find_plans(facts, 1):
        for occurrence in plan.occurrences:
            order = [facts.order[id(node)] for node in occurrence.subgraph]
            assert order == sorted(order) and plan.name == "".join(f"{n.op_type}+" for n in occurrence.subgraph)


def test_a_dropout_is_recomputable_only_with_its_mask_stashed(bloom):
    facts = ForwardFacts(bloom.graphs)
    dropout_plan = next(plan for plan in find_plans(facts, 0) if plan.name == "Dropout+")
    for occurrence in dropout_plan.occurrences:
        assert occurrence.node.output[1] in facts.stashed and occurrence.outputs == (occurrence.node.output[0],)


def test_compromise_stashes_the_smaller_input_of_a_cast():
    import torch
    from tests.reference.recompute.conftest import build

    class HalfStorage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.linear(x.abs().half().float())

    built = build(HalfStorage(), torch.randn(2, 5, 4))
    plans = find_plans(ForwardFacts(built.graphs), 2)
    (plan,) = [plan for plan in plans if plan.strategy == COMPROMISE]
    assert plan.name == "Cast+" and plan.occurrences[0].kept_leaves[0].endswith("Cast_output_0")
    _, report = optimize(built.graphs, 2, (), built.sizes)
    row = next(row for row in report.plans if row.strategy == COMPROMISE)
    assert row.enabled and row.applied == 1 and row.max_saving == 2 * 5 * 4 * 2  # float32 -> float16: half saved
    assert row.outputs[0].saved_percent == 50.0


def test_a_reduction_with_its_axes_as_an_input_is_planned_across():
    """F.normalize exports ReduceL2 with its axes as an input (opset 18), which onnxruntime's symbolic
    shape inference does not know: its shape twin reads it as a ReduceSum (a contrastive model's
    recompute levels raised TypeError there)."""
    import torch

    from reference import Options
    from reference.module import ReferenceModule

    class Normalized(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.nn.functional.normalize(self.proj(x), dim=-1).sum()

    torch.manual_seed(0)
    eager = Normalized()
    x = torch.randn(3, 4)
    eager(x).backward()
    for level in (1, 2):
        wrapped = ReferenceModule(Normalized().requires_grad_(), Options(memory_opt_level=level, fallback="disable"))
        wrapped.load_state_dict(eager.state_dict())
        wrapped(x).backward()
        torch.testing.assert_close(wrapped.module.proj.weight.grad, eager.proj.weight.grad)
