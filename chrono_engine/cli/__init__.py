"""The ``chrono`` command.

::

    chrono demo                         the built-in bilingual walk-through (chrono_engine.demo)
    chrono bench ...                    engine vs peers on a synthetic corpus (chrono_engine.bench)
    chrono info [STORE]                 build information; with a store, its statistics
    chrono ingest STORE FILE            Parquet / Arrow IPC / CSV / JSON Lines into a store
    chrono search STORE --vector ...    fused temporal top-k for one or more vectors
    chrono query STORE TEXT             a question in English or Chinese (time words parsed)
    chrono supersede STORE STEM FILE    a new version of a document lineage
    chrono retract STORE ID...          withdraw items (they stay in history)
    chrono history STORE STEM           every version of a lineage
    chrono verify CHAINS --validity ... STL robustness of reasoning chains
    chrono plot-decay [STORE]           decay curves as a PNG (matplotlib, extra [plot])
    chrono tkg eval [--data NAME|DIR]   TKG forecasting metrics (MRR, Hits@k) of a dataset
    chrono data list|path|download NAME benchmark datasets by name (docs/data.md)

Libraries: argparse (standard library: sub-commands, generated help, no dependency) and
tqdm for progress bars (small, maintained, no dependencies; it draws on stderr only when
that is a terminal, so ``--json`` output and pipes stay clean).

Exit codes: 0 success; 1 the engine refused the input or the request (bad column, unknown
id, lifecycle rule, a query vector of the wrong width, another writer holding the store...);
2 usage error (unknown flag, missing argument, a number out of its range such as ``--batch 0``); 3 a file is missing,
unreadable or corrupt (a store that fails its checks, a model file). Errors are one line on
stderr saying what to do (after argparse's usage line for usage errors); ``--debug`` shows
the traceback instead. A reader that closes the pipe early (``chrono demo | head``) ends the
command quietly with 1, as Python's documentation recommends.

Each command is a module of this package with ``add_parser(sub)`` (its sub-parser and
arguments) and ``run(args)``; ``_common.py`` holds what they share.
"""
from __future__ import annotations

import argparse
import sys

from . import (bench, data, demo, history, info, ingest, plot_decay, query, retract, search, serve, supersede,
               tkg, verify)
from ._common import EXIT_FILE, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError
from .search import SEARCH_FLAGS as _SEARCH_FLAGS  # tests/test_cli.py: one flag per SearchOptions field

__all__ = ["main", "build_parser", "CliError", "EXIT_OK", "EXIT_REFUSED", "EXIT_USAGE", "EXIT_FILE"]

#: the commands in the order ``chrono --help`` lists them
COMMANDS = (demo, bench, info, ingest, search, query, supersede, retract, history, serve, plot_decay, data, tkg,
            verify)


def build_parser() -> argparse.ArgumentParser:
    """The ``chrono`` parser: ``--debug`` and one sub-command per module of :data:`COMMANDS`."""
    top = argparse.ArgumentParser(prog="chrono", description="chrono_engine: temporal-validity retrieval for RAG. "
                                  "Exit codes: 0 ok, 1 refused input, 2 usage, 3 missing or unreadable file.")
    top.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run the ``chrono`` command on ``argv`` (default: the process's arguments); returns the
    exit code (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    rest = [a for a in argv if a != "--debug"]
    if rest[:1] == ["bench"]:
        return bench.run(rest[1:])
    parser = build_parser()
    args = parser.parse_args(rest)  # usage errors: argparse prints usage + message, exit 2
    from ..errors import ChronoError
    try:
        return args.run(args)
    except BrokenPipeError:  # `chrono demo | head`: the reader left; no message
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_REFUSED
    except (CliError, ChronoError, OSError) as e:
        if debug:
            raise
        print(f"chrono {args.command}: error: {e}", file=sys.stderr)
        return _exit_code(e)


def _exit_code(e: BaseException) -> int:
    """The exit code of a command's error: a CliError's own; a store locked by another
    writer, or any other refusal, EXIT_REFUSED; a store or model file missing, unreadable
    or corrupt, or any other OS error, EXIT_FILE."""
    from ..errors import ChronoError, ModelFileError, StorageError, StoreLockedError
    if isinstance(e, CliError):
        return e.code
    if isinstance(e, StoreLockedError):  # another writer has the store: refused, not a file problem
        return EXIT_REFUSED
    if isinstance(e, (StorageError, ModelFileError)) or not isinstance(e, ChronoError):
        return EXIT_FILE
    return EXIT_REFUSED
