"""Instance files (``dfopt-instance/1``): load, validate, build the IR, and write back.

Loading checks the JSON Schema (``dfopt/schema/instance-1.json``) and then the meaning: unique
names, streams that name existing kernels, itensor types, acyclic graphs where a problem needs a
DAG, isl strings of programs, option values that name kernels and slots. Every fault is collected
first; then one :class:`~dfopt.errors.InstanceError` lists them all, each with its JSON pointer.
Bad input never ends in another exception.

>>> inst = from_dict({"format": "dfopt-instance/1", "name": "pair", "problem": "fifo",
...     "graph": {"kernels": [{"name": "a"}, {"name": "b", "ii": 2}],
...               "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 4}]}})
>>> inst.graph.consume_ii("e"), inst.options_for()
(2, {})
>>> to_dict(inst)["graph"]["streams"]
[{'name': 'e', 'src': 'a', 'dst': 'b', 'tokens': 4}]
>>> try:
...     from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "fifo"})
... except InstanceError as err:
...     print(err)
/graph: problem 'fifo' needs a graph (kernels and streams), but the instance has none
"""

from dfopt.errors import InstanceError  # noqa: F401  (the doctests and callers use it from here)
from dfopt.instance.convert import dump, graph_from_dict, graph_to_dict, to_dict
from dfopt.instance.reading import from_dict, load, loads, validate_dict
from dfopt.instance.solutions import dump_solution, load_solution, solution_from_dict
from dfopt.instance.types import FORMAT, NEEDS_DAG, NEEDS_GRAPH, NEEDS_PLATFORM, NEEDS_PROGRAM, PROBLEMS, Instance

__all__ = ["Instance", "load", "loads", "from_dict", "to_dict", "dump", "validate_dict",
           "graph_from_dict", "graph_to_dict", "load_solution", "solution_from_dict", "dump_solution",
           "FORMAT", "PROBLEMS", "NEEDS_GRAPH", "NEEDS_DAG", "NEEDS_PROGRAM", "NEEDS_PLATFORM"]
