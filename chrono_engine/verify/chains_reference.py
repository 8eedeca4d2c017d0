"""Plain NumPy reference for the chain kernels (tests compare the two for exact equality).

Vectorised with segment reductions (``np.minimum.at``) and lexicographic sorts rather than
loops, so it is also the "NumPy baseline" a reader can time against the kernels. It takes
validated inputs (see :class:`~chrono_engine.verify.csr.ChainBatch`) and returns the same
dictionary of arrays as the kernel path.
"""
from __future__ import annotations

import numpy as np

__all__ = ["verify_chains_reference"]


def _first_per_group(groups: np.ndarray, mask: np.ndarray, n_groups: int,
                     fill: int = -1) -> np.ndarray:
    """Position of the first True of ``mask`` in each group (groups sorted), else ``fill``."""
    out = np.full(n_groups, fill, np.int64)
    hits = np.flatnonzero(mask)
    g, first = np.unique(groups[hits], return_index=True)
    out[g] = hits[first]
    return out


def verify_chains_reference(chain_offsets: np.ndarray, step_offsets: np.ndarray,
                            fact_ids: np.ndarray, validity: np.ndarray,
                            gamma: float) -> dict[str, np.ndarray]:
    """Per-chain robustness, bound, weakest step/fact, trigger, targets and step validity.

    ``targets`` is flat with ``target_offsets`` (n_chains + 1); ``step_validity`` is flat and
    indexed like the steps, so ``chain_offsets`` delimits each chain's part of it.
    """
    chain_offsets = np.asarray(chain_offsets, np.int64)
    step_offsets = np.asarray(step_offsets, np.int64)
    fact_ids = np.asarray(fact_ids, np.int64)
    n_chains = chain_offsets.shape[0] - 1
    n_steps = step_offsets.shape[0] - 1
    gamma = float(gamma)

    step_chain = np.repeat(np.arange(n_chains), np.diff(chain_offsets))
    fact_step = np.repeat(np.arange(n_steps), np.diff(step_offsets))
    fact_chain = step_chain[fact_step]
    v = np.asarray(validity)[fact_ids].astype(np.float64)

    step_v = np.full(n_steps, np.inf)
    np.minimum.at(step_v, fact_step, v)
    step_v[np.diff(step_offsets) == 0] = 1.0  # empty step: vacuously valid
    margin = step_v - gamma

    rho = np.full(n_chains, np.inf)
    np.minimum.at(rho, step_chain, margin)
    empty_chain = np.diff(chain_offsets) == 0
    rho[empty_chain] = 0.0

    first_step = _first_per_group(step_chain, margin == rho[step_chain], n_chains)
    weakest_step = np.where(first_step >= 0, first_step - chain_offsets[:-1], -1)

    fmin = np.full(n_chains, np.inf)
    np.minimum.at(fmin, fact_chain, v)
    first_fact = _first_per_group(fact_chain, v == fmin[fact_chain], n_chains)
    has_fact = first_fact >= 0
    weakest_fact = np.full(n_chains, -1, np.int64)
    weakest_fact[has_fact] = fact_ids[first_fact[has_fact]]
    bound = np.where(has_fact, fmin, 1.0)

    # targets: facts below γ, once each (first use), least valid first, ties in reading order
    use = np.flatnonzero(v < gamma)
    order = np.lexsort((use, fact_ids[use], fact_chain[use]))
    sorted_use = use[order]
    c_s, f_s = fact_chain[sorted_use], fact_ids[sorted_use]
    first = np.ones(sorted_use.shape[0], bool)
    first[1:] = (c_s[1:] != c_s[:-1]) | (f_s[1:] != f_s[:-1])
    kept = np.sort(sorted_use[first])
    kept = kept[np.lexsort((kept, v[kept], fact_chain[kept]))]
    targets = fact_ids[kept]
    target_offsets = np.zeros(n_chains + 1, np.int64)
    np.cumsum(np.bincount(fact_chain[kept], minlength=n_chains), out=target_offsets[1:])

    trigger = rho < 0.0
    return {
        "robustness": rho,
        "satisfied": ~trigger,
        "bound": bound,
        "weakest_step": weakest_step,
        "weakest_fact": weakest_fact,
        "trigger": trigger,
        "target_offsets": target_offsets,
        "targets": targets,
        "step_validity": step_v,
    }
