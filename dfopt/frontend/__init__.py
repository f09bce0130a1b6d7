"""Front ends: models from other tools as operator graphs (:mod:`dfopt.ir.opgraph`), the input
of ``problem: pipeline`` (docs/onnx.md).

- :func:`from_onnx` reads an ONNX model (a path or a ``ModelProto``): shapes bound and inferred,
  constants folded, the GELU / SiLU / RMSNorm / LayerNorm / attention patterns rewritten, every
  node translated onto the op set or refused with the node named.
- :func:`import_onnx` does the same and keeps the weights' values and the names
  (:class:`OnnxImport`), for a numerical comparison with the model.
- :func:`onnx_instance` makes the ``problem: pipeline`` instance of a model file (``dfopt import``).
- :func:`from_torch` exports a ``torch.nn.Module`` with ``torch.onnx.export`` and imports it
  (needs ``pip install dfopt[torch]``).

The supported ONNX ops, with the opsets each is tested at, are listed in
:mod:`dfopt.frontend.translate`; the pattern rewrites in :mod:`dfopt.frontend.rewrites`.
"""

from dfopt.frontend.onnx_import import OnnxImport, from_onnx, import_onnx, input_shapes, onnx_instance
from dfopt.frontend.torch_export import from_torch

__all__ = ["from_onnx", "from_torch", "import_onnx", "OnnxImport", "onnx_instance", "input_shapes"]
