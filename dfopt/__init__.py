"""dfopt: solver models for the decisions of dataflow-accelerator compilers."""

import logging

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())
