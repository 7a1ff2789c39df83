"""The MiniLM graph rewritten for CPU inference: less of it held in float32, and onnxruntime's fused
kernels where the exported graph spells an operation out op by op. Every rewrite is exact up to
float rounding (under 1e-5 against the shipped graph, tested).

The shipped graph dequantises every int8 weight in the graph itself (`Cast` to float, `Mul` by
its scales) and onnxruntime's constant folding turns the results into float32 initializers.

- Embedding lookups gather the int8 rows and their per-row scales and dequantise just those:
  folding made the 30522 x 384 word-embedding table 47 MB of float32, though a text reads only
  its own tokens' rows.
- Linear layers: `MatMul(x, Cast(W) * s)` becomes `MatMul(x, Cast(W)) * s` for per-column
  scales `s`, so folding makes one float copy of each weight instead of two (loading peaks
  40 MB lower).
- Attention, exported as reshapes, transposes, two products, a masked softmax and a NaN guard,
  becomes one `MultiHeadAttention` given the attention mask as its key padding mask. The
  erf-based GELU becomes one `Gelu`. With smaller batches (`local.py`), embedding runs a quarter
  to a third faster (docs/BENCHMARKS.md).

Each rewrite matches its pattern or leaves the nodes as they were; the weights file itself is
untouched (its SHA-256 is verified before it is read).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

CONTRIB = "com.microsoft"
MASK_INPUT = "attention_mask"


class _Graph:
    """Producer, consumer and initializer lookups over one graph, which every rewrite needs."""

    def __init__(self, graph: onnx.GraphProto):
        self.graph = graph
        self.producers = {output: node for node in graph.node for output in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.initializers = {init.name: init for init in graph.initializer}

    def producer(self, name: str, op_type: str) -> onnx.NodeProto | None:
        node = self.producers.get(name)
        return node if node is not None and node.op_type == op_type else None

    def sole_consumer(self, name: str, op_type: str) -> onnx.NodeProto | None:
        found = self.consumers.get(name, [])
        return found[0] if len(found) == 1 and found[0].op_type == op_type else None

    def constant(self, name: str) -> np.ndarray | None:
        init = self.initializers.get(name)
        return numpy_helper.to_array(init) if init is not None else None

    def dequantised(self, name: str) -> tuple[str, str] | None:
        """(int8 initializer, scales) when `name` is `Mul(Cast(int8 initializer), scales)`."""
        mul = self.producer(name, "Mul")
        cast = mul and self.producer(mul.input[0], "Cast")
        if cast is None or mul.input[1] not in self.initializers:
            return None
        table = self.initializers.get(cast.input[0])
        if table is None or table.data_type != onnx.TensorProto.INT8:
            return None
        return cast.input[0], mul.input[1]


def rewritten_model(path: Path) -> bytes:
    """The serialized model with every rewrite above applied and what they left unused removed."""
    model = onnx.load(str(path))
    graph = _Graph(model.graph)
    replaced: dict[int, list[onnx.NodeProto]] = {}
    for rewrite in (_lookups, _linear_layers, _attention, _gelu):
        rewrite(graph, replaced)
    nodes = [new for node in model.graph.node for new in replaced.get(id(node), [node])]
    _keep_only_what_outputs_need(model.graph, nodes)
    if not any(opset.domain == CONTRIB for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(CONTRIB, 1))
    return model.SerializeToString()


def _lookups(graph: _Graph, replaced: dict[int, list[onnx.NodeProto]]) -> None:
    for node in graph.graph.node:
        if node.op_type != "Gather" or any(a.name == "axis" and a.i != 0 for a in node.attribute):
            continue
        found = graph.dequantised(node.input[0])
        if found is None or list(graph.initializers[found[1]].dims) != [graph.initializers[found[0]].dims[0], 1]:
            continue
        (table, scales), ids, out = found, node.input[1], node.output[0]
        replaced[id(node)] = [
            helper.make_node("Gather", [table, ids], [f"{out}/q"], name=f"{node.name}/q"),
            helper.make_node("Gather", [scales, ids], [f"{out}/scale"], name=f"{node.name}/scale"),
            helper.make_node("Cast", [f"{out}/q"], [f"{out}/f"], to=onnx.TensorProto.FLOAT, name=f"{node.name}/f"),
            helper.make_node("Mul", [f"{out}/f", f"{out}/scale"], [out], name=f"{node.name}/dequantise"),
        ]


def _linear_layers(graph: _Graph, replaced: dict[int, list[onnx.NodeProto]]) -> None:
    for node in graph.graph.node:
        found = graph.dequantised(node.input[1]) if node.op_type == "MatMul" else None
        scales = graph.initializers[found[1]] if found else None
        if scales is None or len(scales.dims) != 2 or scales.dims[0] != 1:
            continue
        unscaled, out = graph.producers[node.input[1]].input[0], node.output[0]  # Cast(W)
        replaced[id(node)] = [
            helper.make_node("MatMul", [node.input[0], unscaled], [f"{out}/unscaled"], name=node.name),
            helper.make_node("Mul", [f"{out}/unscaled", found[1]], [out], name=f"{node.name}/scale"),
        ]


def _attention(graph: _Graph, replaced: dict[int, list[onnx.NodeProto]]) -> None:
    """`Reshape(Transpose(Where(IsNaN(p), 0, p) @ V))` with `p = Softmax(Q' @ K'^T + mask)`, where Q' and
    K' are the heads of Q and K each scaled by c (so c^2 = 1/sqrt(head size)), becomes one
    MultiHeadAttention over the unsplit Q, K and V and the graph's `attention_mask` input."""
    mask = f"{MASK_INPUT}/int32"
    readers = graph.consumers.get(MASK_INPUT)
    if not readers:
        return
    fused = False
    for softmax in graph.graph.node:
        if softmax.op_type != "Softmax":
            continue
        scores = graph.producer(softmax.input[0], "Add")
        scores = scores and graph.producer(scores.input[0], "MatMul")
        guard = next((c for c in graph.consumers.get(softmax.output[0], []) if c.op_type == "Where"), None)
        context = guard and graph.sole_consumer(guard.output[0], "MatMul")
        merged = context and graph.sole_consumer(context.output[0], "Transpose")
        merged = merged and graph.sole_consumer(merged.output[0], "Reshape")
        scaled_q = scores and graph.producer(scores.input[0], "Mul")
        scale = scaled_q and graph.constant(scaled_q.input[1])
        if merged is None or scale is None or scale.size != 1:
            continue
        q = _before_heads(graph, scores.input[0])
        k = _before_heads(graph, scores.input[1])
        v = _before_heads(graph, context.input[1])
        bias = graph.producer(q, "Add")
        hidden = bias and graph.constant(bias.input[1])
        if hidden is None:
            continue
        head_size = round(float(scale) ** -4)
        replaced[id(merged)] = [helper.make_node(
            "MultiHeadAttention", [q, k, v, "", mask], [merged.output[0]], name=f"{softmax.name}/attention",
            domain=CONTRIB, num_heads=hidden.size // head_size)]
        fused = True
    if fused:
        # The mask's first reader in the graph comes before any attention: the cast goes there.
        first = readers[0]
        replaced[id(first)] = [helper.make_node("Cast", [MASK_INPUT], [mask], to=onnx.TensorProto.INT32, name=mask),
                               *replaced.get(id(first), [first])]


def _before_heads(graph: _Graph, name: str) -> str:
    """The tensor a chain of head-splitting reshapes, transposes and scalings started from."""
    while (node := graph.producers.get(name)) is not None and node.op_type in ("Mul", "Transpose", "Reshape"):
        name = node.input[0]
    return name


def _gelu(graph: _Graph, replaced: dict[int, list[onnx.NodeProto]]) -> None:
    """`x * (0.5 * (erf(x / sqrt 2) + 1))` becomes `Gelu(x)`."""
    for erf in graph.graph.node:
        if erf.op_type != "Erf":
            continue
        divide = graph.producer(erf.input[0], "Div")
        plus_one = graph.sole_consumer(erf.output[0], "Add")
        half = plus_one and graph.sole_consumer(plus_one.output[0], "Mul")
        product = half and graph.sole_consumer(half.output[0], "Mul")
        if divide is None or product is None or divide.input[0] not in product.input:
            continue
        replaced[id(product)] = [helper.make_node("Gelu", [divide.input[0]], [product.output[0]],
                                                  name=f"{product.name}/gelu", domain=CONTRIB)]


def _keep_only_what_outputs_need(graph: onnx.GraphProto, nodes: list[onnx.NodeProto]) -> None:
    needed = {output.name for output in graph.output}
    kept = []
    for node in reversed(nodes):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    initializers = [init for init in graph.initializer if init.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
