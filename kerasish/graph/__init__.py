"""The layer graph: symbolic tensors and nodes (nodes.py), layer calls (calls.py),
graph order and its flat form (topology.py), and the memory plan (memory.py)."""

from kerasish.graph.nodes import KerasTensor, Node, is_symbolic

__all__ = ["KerasTensor", "Node", "is_symbolic"]
