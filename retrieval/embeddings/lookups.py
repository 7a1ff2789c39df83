"""Embedding lookups on the int8 tables of the MiniLM graph, so they stay int8 in memory.

The shipped graph dequantises every weight in the graph itself (`Cast` to float, `Mul` by the
scale) and onnxruntime's constant folding turns each result into a float32 initializer. For
the 30522 x 384 word-embedding table that is 47 MB kept resident and about 100 MB more while
the session loads, although a query only reads the rows of its own tokens. This rewrite makes
each such lookup gather the int8 rows and their per-row scales first and dequantise only
those: the same floats, computed per token instead of per vocabulary entry. The weights file
itself is untouched (its SHA-256 is still verified before it is read).
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import helper


def rewritten_model(path: Path) -> bytes:
    """The serialized model with every Gather over a dequantised table rewritten (see above)."""
    model = onnx.load(str(path))
    graph = model.graph
    producers = {output: node for node in graph.node for output in node.output}
    consumers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            consumers[name] = consumers.get(name, 0) + 1
    initializers = {init.name: init for init in graph.initializer}

    nodes, dropped = [], set()
    for node in graph.node:
        dequantise = _dequantised_table(node, producers, consumers, initializers)
        if dequantise is None:
            nodes.append(node)
            continue
        cast, mul = dequantise
        table, scales, ids, out = cast.input[0], mul.input[1], node.input[1], node.output[0]
        nodes += [
            helper.make_node("Gather", [table, ids], [f"{out}/q"], name=f"{node.name}/q"),
            helper.make_node("Gather", [scales, ids], [f"{out}/scale"], name=f"{node.name}/scale"),
            helper.make_node("Cast", [f"{out}/q"], [f"{out}/f"], to=onnx.TensorProto.FLOAT, name=f"{node.name}/f"),
            helper.make_node("Mul", [f"{out}/f", f"{out}/scale"], [out], name=f"{node.name}/dequantise"),
        ]
        dropped.update((id(cast), id(mul)))
    del graph.node[:]
    graph.node.extend(node for node in nodes if id(node) not in dropped)
    return model.SerializeToString()


def _dequantised_table(node, producers: dict, consumers: dict[str, int],
                       initializers: dict) -> tuple[onnx.NodeProto, onnx.NodeProto] | None:
    """(Cast, Mul) when `node` gathers from `Mul(Cast(int8 table), per-row scales)` and nothing
    else reads the float table; None otherwise."""
    if node.op_type != "Gather" or any(a.name == "axis" and a.i != 0 for a in node.attribute):
        return None
    mul = producers.get(node.input[0])
    if mul is None or mul.op_type != "Mul" or consumers.get(node.input[0]) != 1:
        return None
    cast = producers.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or consumers.get(mul.input[0]) != 1:
        return None
    table, scales = initializers.get(cast.input[0]), initializers.get(mul.input[1])
    if table is None or scales is None or table.data_type != onnx.TensorProto.INT8:
        return None
    if list(scales.dims) != [table.dims[0], 1]:
        return None
    return cast, mul
