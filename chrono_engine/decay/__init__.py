"""Decay families D(age) and per-fact-type decay policies.

The validity of an evidence item e at query time T is (paper eq. 2/3)

    V(e, T) = q_e · D_j(age),    age = T − t_e  (days)

where q_e is the source reliability and D_j the decay profile of the item's fact type j
(its "sensitivity class"). The package holds

* ``families.py``: the decay families (:class:`Decay` and its subclasses), their
  vectorised NumPy references (``Decay.evaluate``) and the exact parameter contract of the
  C++ kernel (``Decay._kernel_spec`` and its NumPy reference :func:`evaluate_spec`);
* ``policy.py``: :class:`DecayPolicy`, which picks a family per fact type, its saved
  format, and :func:`parse_decay`;
* ``interop.py``: Elasticsearch, Qdrant and chronofy decay parameters read as ours
  (behind ``Decay.from_elasticsearch``, ``Decay.from_qdrant`` and
  ``DecayPolicy.from_chronofy``; :data:`CHRONOFY_DEFAULT_BETA`);
* ``_checks.py``: the argument checks they share.

Conventions shared by every family:

* the caller passes ``age_days = T − t_e`` in days (float, scalar or array; NaN gives NaN;
  ``numpy.timedelta64`` values are converted to days);
* ``unit=`` says in which unit the *parameters* are given ("days", "hours" or "seconds");
  internally the age is converted to that unit (``a = age_days · 24`` for hours);
* a non-symmetric family clamps negative ages (items observed after T) to 0, so D = 1;
  ``symmetric=True`` uses the distance |T − t_e| instead, for window-centred decay (the
  Elasticsearch / Milvus / Qdrant behaviour, which measure |value − origin|);
* formulas match the ``chronofy`` reference package (0.1.9) where it has the family.

>>> from chrono_engine.decay import Exponential, DecayPolicy, NoDecay
>>> news = Exponential(half_life=7)            # β = ln 2 / 7 per day
>>> [round(float(v), 4) for v in news([0, 7, 14])]
[1.0, 0.5, 0.25]
>>> policy = DecayPolicy({"news": news}, default=NoDecay())
>>> policy.evaluate([7, 7], ["news", "demographic"]).tolist()
[0.5, 1.0]
"""
from __future__ import annotations

from types import FunctionType as _FunctionType

from .families import (Decay, Exponential, Gaussian, HalfLife, KernelSpec, Linear, NoDecay, PowerLaw, Weibull,
                       evaluate_spec)
from .interop import CHRONOFY_DEFAULT_BETA
from .policy import DecayPolicy, parse_decay

__all__ = [
    "Decay",
    "Exponential",
    "HalfLife",
    "Gaussian",
    "Linear",
    "PowerLaw",
    "Weibull",
    "NoDecay",
    "DecayPolicy",
    "parse_decay",
    "evaluate_spec",
    "CHRONOFY_DEFAULT_BETA",
]


def _name_this_module(*objects: type | _FunctionType) -> None:
    """Make ``chrono_engine.decay`` the ``__module__`` of ``objects`` and of their methods.

    It is the path users import: pickles record it (``Decay.__reduce__`` names
    ``chrono_engine.decay.Decay.from_dict``), and ``doctest.testmod(chrono_engine.decay)``
    collects the examples of the objects and methods whose module it is.
    """
    for obj in objects:
        obj.__module__ = __name__
        for member in vars(obj).values() if isinstance(obj, type) else ():
            function = getattr(member, "__func__", member)  # a classmethod's function
            if isinstance(function, _FunctionType):
                function.__module__ = __name__


_name_this_module(Decay, Exponential, HalfLife, Gaussian, Linear, PowerLaw, Weibull, NoDecay, DecayPolicy,
                  parse_decay, evaluate_spec)
