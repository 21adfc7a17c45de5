"""``python -m ortcheck.models``: the ONNX op types the default Bloom model exports to."""
from ortcheck.models import BloomConfig, build_bloom, example_input_ids, export_training_graph, op_types

config = BloomConfig()
print(" ".join(op_types(export_training_graph(build_bloom(config), (example_input_ids(config),)))))
