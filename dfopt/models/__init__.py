"""One package per decision, each on the one contract of :mod:`dfopt.models.base`.

A problem package defines ``PROBLEM`` (a :class:`~dfopt.models.base.Problem`: its Options, its
typed decision, the data it prepares, its formulations, report, checker and summary) and is
listed once in :mod:`dfopt.models.registry`; :mod:`dfopt.models.driver` runs every problem alike.

>>> from dfopt.models.registry import get_problem, names
>>> names()[:3], get_problem("fifo").default
(('fifo', 'converter', 'fusion'), 'slack')
"""
