"""``chrono bench``: the benchmark harness (:mod:`chrono_engine.bench`), or with ``--serve``
the HTTP service under load; both parse their own arguments."""
from __future__ import annotations

from ._common import EXIT_OK


def add_parser(sub) -> None:
    """The ``bench`` command: listed in the help, its arguments parsed by the harness."""
    sub.add_parser("bench", add_help=False,
                   help="engine vs NumPy / Numba / hnswlib on a synthetic corpus (chrono bench --help); "
                        "--serve: the HTTP service under load (chrono bench --serve --help)")


def run(argv: list[str]) -> int:
    """The harness on ``argv`` (what follows ``chrono bench``); :func:`~chrono_engine.cli.main`
    calls it before parsing, so that the harness reads its own flags."""
    if "--serve" in argv:  # the HTTP service under load (chrono_engine/bench/serve_load.py)
        from ..bench import serve_load
        serve_load.main([a for a in argv if a != "--serve"])
        return EXIT_OK
    from .. import bench
    bench.main(argv, prog="chrono bench")
    return EXIT_OK
