"""``chrono data``: benchmark datasets by name (list, path, download; docs/data.md)."""
from __future__ import annotations

import json

from ._common import EXIT_FILE, EXIT_OK, CliError


def add_parser(sub) -> None:
    """The ``data`` command, its ``list``, ``path`` and ``download`` sub-commands and their
    arguments."""
    p = sub.add_parser("data", help="benchmark datasets by name: list, path NAME, download NAME")
    dsub = p.add_subparsers(dest="data_command", required=True, metavar="DATA_COMMAND")
    data_cmds = {
        "list": dsub.add_parser("list", help="the known datasets, the data directory and which are present"),
        "path": dsub.add_parser("path", help="print the folder of dataset NAME (exit 3 and how to get it "
                                             "if it is absent)"),
        "download": dsub.add_parser("download", help="fetch dataset NAME from its pinned public sources "
                                                     "(size and sha256 checked)")}
    for p in data_cmds.values():
        p.add_argument("--data-dir", help="data directory (default: $CHRONO_DATA_DIR, else the per-user cache)")
        p.add_argument("--json", action="store_true", help="JSON output")
        p.set_defaults(run=run)
    for p in (data_cmds["path"], data_cmds["download"]):
        p.add_argument("name", metavar="NAME")
    p = data_cmds["download"]
    p.add_argument("--base-url", help="mirror serving OWNER/REPO/COMMIT/PATH (default: $CHRONO_DATA_URL, "
                                      "else raw.githubusercontent.com)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a connection or a read")
    p.add_argument("--force", action="store_true", help="fetch every file again, even those already checked")


def run(args) -> int:
    """List the datasets, print one's folder, or download one."""
    from .. import datasets
    from ..errors import DatasetNotFoundError, DownloadError
    try:
        if args.data_command == "list":
            where = datasets.data_dir(args.data_dir)
            known = [(name, datasets.is_present(name, args.data_dir), datasets.get(name).description)
                     for name in datasets.names()]
            if args.json:
                print(json.dumps({"data_dir": str(where), "datasets": [
                    {"name": n, "present": p, "description": d} for n, p, d in known]}, ensure_ascii=False, indent=1))
                return EXIT_OK
            print(f"data directory: {where}")
            for name, present, description in known:
                print(f"  {name:10s} {'present' if present else 'absent':8s} {description}")
        elif args.data_command == "path":
            path = datasets.locate(datasets.get(args.name).name, args.data_dir)
            print(json.dumps({"name": args.name, "path": str(path)}) if args.json else path)
        else:
            root = datasets.download(args.name, args.data_dir, base_url=args.base_url, timeout=args.timeout,
                                     force=args.force)
            n = len(datasets.get(args.name).files)
            print(json.dumps({"name": args.name, "path": str(root), "files": n}) if args.json
                  else f"{args.name}: {n} files checked in {root}")
    except (DatasetNotFoundError, DownloadError) as e:
        raise CliError(str(e), EXIT_FILE) from None
    return EXIT_OK
