"""PyTorch modules through ONNX: :func:`from_torch` exports with ``torch.onnx.export`` to a
temporary file and imports it with :func:`dfopt.frontend.from_onnx`. torch is optional
(``pip install dfopt[torch]``); without it the call is a clear error.

>>> import sys
>>> saved, sys.modules["torch"] = sys.modules.get("torch"), None     # as if torch were not installed
>>> try:
...     from_torch(object(), ())
... except InstanceError as err:
...     print(str(err)[:81])
... finally:
...     _ = sys.modules.pop("torch") if saved is None else sys.modules.update(torch=saved)
/: from_torch needs PyTorch, which is not installed: pip install dfopt[torch] (or
"""

from __future__ import annotations

import inspect
import os
import tempfile
from typing import Any

from dfopt.errors import InstanceError
from dfopt.ir.opgraph import OpGraph

DEFAULT_OPSET = 17


def from_torch(module: Any, example_inputs: Any, *, opset: int = DEFAULT_OPSET, input_names: list | None = None,
               dynamo: bool = False, **kw: Any) -> OpGraph:
    """The operator graph of ``module`` run on ``example_inputs`` (a tensor or a tuple of them),
    exported at ``opset`` by the TorchScript exporter (``dynamo=True``: torch.export's, which
    needs ``onnxscript``); ``kw`` goes to :func:`~dfopt.frontend.from_onnx` (``input_shapes``,
    ``batch``, ``dtype``). ``benchmarks/torch_exports.py`` runs both exporters on Llama-, GPT-2-,
    CNN- and MLP-style modules."""
    try:
        import torch
    except ImportError as err:
        raise InstanceError("from_torch needs PyTorch, which is not installed: pip install dfopt[torch] (or export "
                            "the model with torch.onnx.export yourself and use from_onnx)") from err
    from dfopt.frontend.onnx_import import from_onnx

    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    # torch >= 2.5 chooses the exporter with ``dynamo``; before, only the TorchScript one exists
    legacy = {"dynamo": dynamo} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with tempfile.TemporaryDirectory(prefix="dfopt-torch-") as folder:
        path = os.path.join(folder, "model.onnx")
        module.eval()
        with torch.no_grad():
            torch.onnx.export(module, args, path, opset_version=opset, input_names=input_names, **legacy)
        return from_onnx(path, **kw)
