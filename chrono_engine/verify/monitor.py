"""Online monitoring of knowledge validity while a model reasons (paper, section III-D4).

:class:`ValidityMonitor` is fed one reasoning step at a time. It keeps the robustness so far
(ρ over the steps seen, exactly what :func:`~chrono_engine.verify.verify_chains` would report
for that prefix) and fires a re-acquisition trigger.

The paper sets a lag window L = 3 without defining it. Here L is **hysteresis**: the
trigger fires when L consecutive steps violate v(s_i) ≥ γ, so one stale step among fresh
ones does not interrupt the model, while a sustained run of stale evidence does. L = 1 is
the eager behaviour (fire at the first violating step, i.e. as soon as ρ < 0). Once fired,
the trigger stays latched for the rest of the run and re-arms at the next step that
satisfies v(s_i) ≥ γ, so each violating run fires at most once.

>>> import numpy as np
>>> m = ValidityMonitor(gamma=0.5, lag=2, validity=np.array([0.9, 0.2, 0.4]))
>>> [m.observe(step).fired for step in ([0], [1], [2], [0])]
[False, False, True, False]
>>> m.robustness, m.fired_count
(-0.3, 1)
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._args import array, shown
from ..errors import QueryError
from .chains import as_validity, check_gamma

__all__ = ["ValidityMonitor", "MonitorEvent"]


@dataclass(frozen=True)
class MonitorEvent:
    """What one observed step did to the monitor.

    Attributes:
        step: 0-based index of the step.
        step_validity: v(s_i), the least validity among the step's facts (1.0 if none).
        robustness: ρ over every step so far, min_i (v(s_i) − γ).
        violating: v(s_i) < γ.
        run_length: consecutive violating steps ending here (0 if this step satisfies γ).
        fired: the trigger fired at this step (run_length reached the lag L).
        triggered: the trigger is latched (fired during the current violating run).
        targets: while triggered, the facts below γ in the current run, once each, least
            valid first (ties in the order seen); empty otherwise.
    """

    step: int
    step_validity: float
    robustness: float
    violating: bool
    run_length: int
    fired: bool
    triggered: bool
    targets: tuple[int, ...]


class ValidityMonitor:
    """Streaming form of layer 3: robustness so far plus a lagged re-acquisition trigger.

    Args:
        gamma: γ, the minimum acceptable validity, in [0, 1].
        lag: L ≥ 1, consecutive violating steps before the trigger fires (default 3,
            the paper's setting; 1 fires eagerly).
        validity: optional V(e, T) per fact id; then :meth:`observe` takes fact ids only.

    Feed steps with :meth:`observe`; read :attr:`robustness`, :attr:`bound`,
    :attr:`weakest_step`, :attr:`weakest_fact`, :attr:`triggered` and :attr:`targets`
    at any time. The monitor is not thread-safe: use one per reasoning trace.
    """

    def __init__(self, gamma: float, lag: int = 3, *, validity: Any = None):
        self._gamma = check_gamma(gamma)
        if isinstance(lag, (bool, np.bool_)) or not isinstance(lag, numbers.Integral) or lag < 1:
            raise QueryError(f"lag (L, consecutive violating steps before the trigger fires) "
                             f"must be an integer ≥ 1, got {shown(lag)}")
        self._lag = int(lag)
        self._validity = None if validity is None else as_validity(validity)
        self.reset()

    def reset(self) -> None:
        """Forget every step (start a new trace with the same γ, L and validity)."""
        self._steps = 0
        self._step_validity: list[float] = []
        self._best_margin = np.inf
        self._weakest_step: int | None = None
        self._bound = 1.0
        self._weakest_fact: int | None = None
        self._run = 0
        self._triggered = False
        self._fired = 0
        self._run_targets: dict[int, tuple[float, int]] = {}
        self._seen = 0  # facts observed, for ids when only values are given

    @property
    def gamma(self) -> float:
        """γ, the validity threshold."""
        return self._gamma

    @property
    def lag(self) -> int:
        """L, consecutive violating steps needed to fire."""
        return self._lag

    @property
    def steps(self) -> int:
        """Steps observed so far."""
        return self._steps

    @property
    def step_validity(self) -> list[float]:
        """v(s_i) for every step observed."""
        return list(self._step_validity)

    @property
    def robustness(self) -> float:
        """ρ = min_i (v(s_i) − γ) over the steps so far (0.0 before the first, as chronofy)."""
        return float(self._best_margin) if self._steps else 0.0

    @property
    def satisfied(self) -> bool:
        """ρ ≥ 0 so far."""
        return self.robustness >= 0.0

    @property
    def bound(self) -> float:
        """Weakest-link bound so far: min V over every fact seen (1.0 if none), Theorem 1."""
        return self._bound

    @property
    def weakest_step(self) -> int | None:
        """Index of the step with the least validity (first on ties), None before any step."""
        return self._weakest_step

    @property
    def weakest_fact(self) -> int | None:
        """Id of the least valid fact seen (first on ties), None if no fact yet."""
        return self._weakest_fact

    @property
    def triggered(self) -> bool:
        """The trigger is latched (it fired during the current violating run)."""
        return self._triggered

    @property
    def run_length(self) -> int:
        """Consecutive violating steps up to the latest."""
        return self._run

    @property
    def fired_count(self) -> int:
        """How many times the trigger has fired."""
        return self._fired

    @property
    def targets(self) -> tuple[int, ...]:
        """While triggered: the current run's facts below γ, least valid first."""
        if not self._triggered:
            return ()
        items = sorted(self._run_targets.items(), key=lambda kv: kv[1])
        return tuple(fid for fid, _ in items)

    def _step_values(self, facts: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
        if values is None:
            if self._validity is None:
                raise QueryError("observe() got fact ids but the monitor has no validity "
                                 "array: pass values=... or ValidityMonitor(validity=...)")
            ids = _int_ids(facts, "facts")
            n = self._validity.shape[0]
            if ids.size and (ids.min() < 0 or ids.max() >= n):
                bad = int(ids[(ids < 0) | (ids >= n)][0])
                raise QueryError(f"step {self._steps}: fact id {bad} is out of range for a "
                                 f"validity array of {n} facts")
            vals = self._validity[ids].astype(np.float64)
        else:
            vals = np.atleast_1d(array(values, "values", QueryError, np.float64))
            if vals.ndim != 1:
                raise QueryError(f"values must be 1-D, got shape {vals.shape}")
            if facts is None:
                ids = np.arange(self._seen, self._seen + vals.shape[0], dtype=np.int64)
            else:
                ids = _int_ids(facts, "facts")
                if ids.shape != vals.shape:
                    raise QueryError(f"step {self._steps}: {ids.shape[0]} fact ids but "
                                     f"{vals.shape[0]} values")
        finite = np.isfinite(vals)
        if not finite.all():
            k = int(np.flatnonzero(~finite)[0])
            raise QueryError(f"step {self._steps}: fact {int(ids[k])} has validity {vals[k]}; "
                             f"validity must be a finite number")
        return ids, vals

    def observe(self, facts: Sequence[int] | np.ndarray | None = None, *,
                values: Sequence[float] | np.ndarray | None = None) -> MonitorEvent:
        """Feed one reasoning step and report what it changed.

        Args:
            facts: ids of the facts the step used (looked up in ``validity`` when
                ``values`` is not given). Without ids, ``values`` are numbered by a running
                count of the facts observed, and targets report those numbers.
            values: V(e, T) of each fact the step used.
        """
        ids, vals = self._step_values(facts, values)
        self._seen += vals.shape[0]
        g = self._gamma
        index = self._steps
        v = 1.0  # a step with no facts is vacuously valid (chronofy)
        if vals.size:
            k = int(np.argmin(vals))  # first least valid fact of the step
            v = float(vals[k])
            if v < self._bound or self._weakest_fact is None:
                self._bound, self._weakest_fact = v, int(ids[k])
        margin = v - g
        if margin < self._best_margin:
            self._best_margin, self._weakest_step = margin, index
        self._steps += 1
        self._step_validity.append(v)

        violating = v < g
        fired = False
        if violating:
            self._run += 1
            for j in np.flatnonzero(vals < g):
                fid = int(ids[j])
                if fid not in self._run_targets:
                    self._run_targets[fid] = (float(vals[j]), len(self._run_targets))
            if self._run >= self._lag and not self._triggered:
                self._triggered = fired = True
                self._fired += 1
        else:
            self._run = 0
            self._triggered = False
            self._run_targets = {}
        return MonitorEvent(step=index, step_validity=v, robustness=self.robustness,
                            violating=violating, run_length=self._run, fired=fired,
                            triggered=self._triggered, targets=self.targets)

    def __repr__(self) -> str:
        return (f"ValidityMonitor(gamma={self._gamma}, lag={self._lag}, steps={self._steps}, "
                f"robustness={self.robustness:.6g}, triggered={self._triggered})")


def _int_ids(facts: Any, name: str) -> np.ndarray:
    arr = np.atleast_1d(array(facts if facts is not None else [], name, QueryError))
    if arr.size == 0:
        return np.zeros(0, np.int64)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise QueryError(f"{name} must be a 1-D list of integer fact ids, got {arr.dtype} "
                         f"{arr.shape}")
    return arr.astype(np.int64)
