"""The tiling stage of the end-to-end pipeline (StreamTensor section 5.1).

So far: the analytical kernel model (:mod:`.costs`) that turns a tiled kernel into delay, II and
resources; the transformer-block generator builds its kernels with it.
"""
