"""The tiling stage of the end-to-end pipeline (StreamTensor section 5.1).

:mod:`.tiler` turns an operator graph (:class:`dfopt.ir.opgraph.OpGraph`) into a tiled, costed
:class:`~dfopt.ir.graph.DataflowGraph`: tile sizes, loop order, intensity-aware unrolling, vector
widths and the itensor types of every port; :mod:`.costs` is the analytical kernel model (delay,
II, resources) it and the transformer-block generator use; :mod:`.schedules` derives from it the
exact per-token schedule of every port (when the emitted process reads and writes each token).
Not yet a ``problem: tiling`` model
of its own: call :func:`.tiler.tile_graph` from Python.
"""
