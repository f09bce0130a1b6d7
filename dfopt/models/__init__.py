"""One module per decision. Each exposes ``Options`` (frozen dataclass), ``FORMULATIONS``
(name -> function), ``DEFAULT_FORMULATION``, ``solve(instance, options) -> Solution`` and
``check(instance, solution) -> list[Violation]`` written without the solver.

>>> sorted(MODEL_NAMES)
['converter', 'fifo', 'fusion', 'mapping', 'memory', 'pipeline', 'placement', 'schedule']
>>> get_model("fifo").__name__
'dfopt.models.fifo'
"""

from __future__ import annotations

import importlib

from dfopt.errors import unknown_name_error

MODEL_NAMES = {"fifo": "dfopt.models.fifo", "converter": "dfopt.models.converter",
               "fusion": "dfopt.models.fusion", "placement": "dfopt.models.placement",
               "pipeline": "dfopt.models.pipeline",
               "memory": "dfopt.models.memory", "schedule": "dfopt.models.schedule",
               "mapping": "dfopt.models.mapping"}


def get_model(problem: str):
    """The model module of a problem; an unknown problem lists the known ones."""
    if problem not in MODEL_NAMES:
        raise unknown_name_error("problem (no model yet for it)", problem, MODEL_NAMES, pointer="/problem")
    return importlib.import_module(MODEL_NAMES[problem])
