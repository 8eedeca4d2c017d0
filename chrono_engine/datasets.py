"""Benchmark datasets by name: where they are found, and a checked download.

The benchmarks, ``chrono tkg eval`` and the data tests ask for a dataset by name
(``"icews14"``, ``"timeqa"``) instead of by path. A name is looked up as a folder of the
same name in one data directory, the first of:

1. the ``data_dir`` argument;
2. the environment variable ``CHRONO_DATA_DIR``;
3. the package's per-user cache, ``data/`` in ``$CHRONO_ENGINE_CACHE``, else in
   ``$XDG_CACHE_HOME/chrono_engine``, else in ``~/.cache/chrono_engine`` (the tokenizer of
   the text encoder is cached there too).

A dataset counts as present when every one of its files is there. :func:`download` fetches
the files from the public repositories they come from, each pinned to an upstream commit
and to its sha256 and size (the table is :data:`DATASETS`; ``docs/data.md`` describes the
data). Anything that is not a known name is taken as a path, so existing calls with a
folder keep working:

>>> from chrono_engine import datasets
>>> datasets.names()
('icews14', 'timeqa')
>>> datasets.locate("some/folder/of/my/own")
PosixPath('some/folder/of/my/own')
>>> datasets.data_dir("/srv/chrono-data")
PosixPath('/srv/chrono-data')
"""
from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ._util import cache_dir
from .errors import DatasetNotFoundError, DownloadError

__all__ = ["RemoteFile", "Dataset", "DATASETS", "DEFAULT_BASE_URL", "names", "get", "data_dir", "locate",
           "is_present", "download"]

#: Where :func:`download` fetches from unless told otherwise: the raw-file host of GitHub,
#: which serves ``<owner>/<repo>/<commit>/<path>`` byte for byte.
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"

_CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset: where it goes (``path``, relative to the dataset's folder),
    where it comes from (``path_upstream`` in ``repo`` at ``commit``) and what it must be
    (``size`` bytes with this ``sha256``)."""

    path: str
    repo: str
    commit: str
    path_upstream: str
    size: int
    sha256: str

    def url(self, base_url: str = DEFAULT_BASE_URL) -> str:
        """The file's address under ``base_url``.

        >>> DATASETS["timeqa"].files[0].url("http://127.0.0.1:8000")  # doctest: +ELLIPSIS
        'http://127.0.0.1:8000/wenhuchen/Time-Sensitive-QA/38b05989.../dataset/human_annotated_train.json'
        """
        return f"{base_url.rstrip('/')}/{self.repo}/{self.commit}/{self.path_upstream}"


@dataclass(frozen=True)
class Dataset:
    """A named dataset: a one-line description and its files."""

    name: str
    description: str
    files: tuple[RemoteFile, ...]


_TLOGIC = ("liu-yushan/TLogic", "9f6ffa3cc5c112226dc2537983b6bb33d4ef295e", "data/icews14/")
_XERTE = ("TemporalKGTeam/xERTE", "d7a55d1c692cc97cdff8dde131093217dc6ea082",
          "tKGR/data/ICEWS14_forecasting/")
_TIMEQA = ("wenhuchen/Time-Sensitive-QA", "38b05989070c1168b2bef3d5a2656afeeba763dc", "dataset/")


def _files(source, folder: str, pins) -> tuple[RemoteFile, ...]:
    repo, commit, upstream = source
    return tuple(RemoteFile(folder + name, repo, commit, upstream + name, size, sha)
                 for name, size, sha in pins)


#: Every dataset known by name. ICEWS14 is the xERTE / TLogic split in TLogic's "names"
#: format (the folder :func:`chrono_engine.tkg.load` reads) with xERTE's "ids" encoding of
#: the same facts in ``xerte_ids/``; TimeQA is the human-annotated train split.
DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("icews14", "ICEWS14 temporal knowledge graph, xERTE/TLogic split (63,685 / 13,823 / "
                       "13,222 dated facts)",
            _files(_TLOGIC, "", (
                ("train.txt", 4392965, "e66100f4d1a11198fad0120e3596981494dfe0c3f930211608a10377a7af3a1a"),
                ("valid.txt", 955527, "ce4862c7bc517f322b33742909a1e1e893a950b2ce290c6e14348611736ed9a2"),
                ("test.txt", 908196, "7ecf0f159445aadacddd03198a8aa363c9b803671ae7f38edd32ee5520a925f6"),
                ("entity2id.json", 227317, "01c47a9e02dfedd9b33a6d1df9d035ff10f50dd810841b93604b73658f6c6ba1"),
                ("relation2id.json", 8546, "e75f5a29973228261f2a7b291cd2f716f84ce00fe2c82ce7f10163d5c76adb8a"),
                ("ts2id.json", 6825, "7f6374a09e26d8898a7f210d68bd7ff1df9aa037bb50e3aea0a214de7ea43896"),
                ("statistics.yaml", 690, "761c499943c9404990437fe161ea6f48a72d2a8920ce9e8b8c03328798f19825")))
            + _files(_XERTE, "xerte_ids/", (
                ("train.txt", 1176931, "f1afca58a2537b323ab97ea237b865403f65a94b2e393807c2542338d0603da2"),
                ("valid.txt", 258584, "96ecf52a26b5b3af86836ddaaba57b0d1c05239c269dfc6c9e9893bde456baab"),
                ("test.txt", 248450, "0156d01b465fbfeebd65182155fa3b981131a731cf2669b3bd2512c8ac57d7c6"),
                ("entity2id.txt", 198041, "703678935d28c068a79fd2f8ac5ae2c54306f2ad03268a058d9a448fde9f59e3"),
                ("relation2id.txt", 7626, "0a56e88458482f1457d45004d79b09217ff016a2d5a7f1bc947735b51886ec07")))),
    Dataset("timeqa", "TimeQA human-annotated train split (320 Wikipedia documents with "
                      "time-constrained questions)",
            _files(_TIMEQA, "", (
                ("human_annotated_train.json", 4064336,
                 "99eec0514569ecbdea087ae3751a1e7d5ae0e45fcf82f9b4e9226f30967939b5"),))),
)}


def names() -> tuple[str, ...]:
    """The names :func:`locate` and :func:`download` know, sorted."""
    return tuple(sorted(DATASETS))


def get(name: str) -> Dataset:
    """The :class:`Dataset` called ``name`` (its files and pins); DatasetNotFoundError for a
    name that is not known.

    >>> [f.path for f in get("timeqa").files]
    ['human_annotated_train.json']
    """
    if name not in DATASETS:
        raise DatasetNotFoundError(f"unknown dataset {name!r}; known: {', '.join(names())}")
    return DATASETS[name]


def _data_dir_and_origin(data_dir) -> tuple[Path, str]:
    if data_dir is not None:
        return Path(data_dir), "the data_dir argument"
    if os.environ.get("CHRONO_DATA_DIR"):
        return Path(os.environ["CHRONO_DATA_DIR"]), "CHRONO_DATA_DIR"
    return cache_dir() / "data", "the per-user cache, as CHRONO_DATA_DIR is not set"


def data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The directory named datasets live in: ``data_dir`` if given, else
    ``$CHRONO_DATA_DIR``, else the per-user cache (see the module docstring)."""
    return _data_dir_and_origin(data_dir)[0]


def _missing(spec: Dataset, root: Path) -> list[str]:
    return [f.path for f in spec.files if not (root / f.path).is_file()]


def is_present(name: str, data_dir: str | os.PathLike | None = None) -> bool:
    """Whether every file of dataset ``name`` is in the data directory (no checksum is
    computed; :func:`download` checks them)."""
    spec = get(name)
    return not _missing(spec, _data_dir_and_origin(data_dir)[0] / spec.name)


def locate(name_or_path: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
    """The folder of a dataset given by name, or ``name_or_path`` itself as a path.

    A ``str`` equal to a known name (:func:`names`) is a name: its folder in the data
    directory is returned when all its files are there, else :class:`DatasetNotFoundError`
    says where the loader looked, what is missing and how to get it. Anything else (a
    ``Path``, or a string such as ``"./icews14"`` or ``"data/icews14"``) is returned as a
    ``Path`` unchecked, for the caller to read.

    >>> from chrono_engine import datasets, errors
    >>> try:
    ...     datasets.locate("icews14", data_dir="/nonexistent")
    ... except errors.DatasetNotFoundError as e:
    ...     print(e.path)
    /nonexistent/icews14
    """
    if not isinstance(name_or_path, str) or name_or_path not in DATASETS:
        return Path(name_or_path)
    spec = DATASETS[name_or_path]
    base, origin = _data_dir_and_origin(data_dir)
    root = base / spec.name
    missing = _missing(spec, root)
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise DatasetNotFoundError(
            f"dataset {spec.name!r} not found in {root} (from {origin}; missing {shown}). "
            f"To get it, set CHRONO_DATA_DIR to a folder that holds {spec.name}/, or download the "
            f"public files (network needed) with `chrono data download {spec.name}` or "
            f"chrono_engine.datasets.download({spec.name!r})", path=str(root))
    return root


def download(name: str, data_dir: str | os.PathLike | None = None, *, base_url: str | None = None,
             timeout: float = 60.0, force: bool = False) -> Path:
    """Fetch dataset ``name`` into the data directory and return its folder.

    Each file comes from its pinned upstream commit (``base_url``, default
    ``$CHRONO_DATA_URL`` or :data:`DEFAULT_BASE_URL`) and must have its pinned size and
    sha256. A file already present with the right checksum is kept, not fetched again
    (``force=True`` fetches every file). Bodies are written to temporary files beside their
    destination and renamed only once every file of this call has arrived complete and
    matched; any failure (host unreachable, HTTP error, ``timeout`` seconds without data,
    a body that is truncated, larger than pinned or with another sha256) removes what this
    call wrote and raises :class:`DownloadError`.

    >>> from chrono_engine import datasets
    >>> datasets.download("icews14", "/tmp/chrono-data")  # doctest: +SKIP
    PosixPath('/tmp/chrono-data/icews14')
    """
    spec = get(name)
    base = base_url or os.environ.get("CHRONO_DATA_URL") or DEFAULT_BASE_URL
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        raise DownloadError(f"cannot download from {base!r}: the base URL must be http:// or https://",
                            url=base)
    root = _data_dir_and_origin(data_dir)[0] / spec.name
    todo = [f for f in spec.files if force or not _matches(root / f.path, f)]
    staged: list[tuple[Path, Path]] = []
    made: list[Path] = []
    try:
        for f in todo:
            dest = root / f.path
            made += _make_dirs(dest.parent)
            staged.append((_fetch(f.url(base), f, dest, timeout), dest))
        for part, dest in staged:
            os.replace(part, dest)
    except BaseException:
        for part, _ in staged:
            part.unlink(missing_ok=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:  # not empty: something else lives there now
                pass
        raise
    return root


def _make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents; return the ones created, outermost first."""
    new = []
    p = path
    while not p.exists() and p != p.parent:
        new.append(p)
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    return new[::-1]


def _copy(src, out, limit: int) -> tuple[str, int]:
    """Read ``src`` to its end, or to ``limit + 1`` bytes at most, writing to ``out`` (if not
    None); return the sha256 of what was read and its length."""
    h = hashlib.sha256()
    n = 0
    while n <= limit:
        chunk = src.read(min(_CHUNK, limit + 1 - n))
        if not chunk:
            break
        n += len(chunk)
        h.update(chunk)
        if out is not None:
            out.write(chunk)
    return h.hexdigest(), n


def _matches(path: Path, f: RemoteFile) -> bool:
    if not path.is_file() or path.stat().st_size != f.size:
        return False
    with open(path, "rb") as src:
        return _copy(src, None, f.size) == (f.sha256, f.size)


def _fetch(url: str, f: RemoteFile, dest: Path, timeout: float) -> Path:
    """Download ``url`` into a temporary file beside ``dest``; return it once it has the
    pinned size and sha256. On any failure the temporary file is removed."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            digest, n = _receive(url, f, out, timeout)
            out.flush()
            os.fsync(out.fileno())
        if n < f.size:
            raise DownloadError(f"{url}: truncated body, {n:,} of {f.size:,} bytes", url=url)
        if n > f.size:
            raise DownloadError(f"{url}: body larger than the pinned {f.size:,} bytes; refused", url=url)
        if digest != f.sha256:
            raise DownloadError(f"{url}: sha256 {digest} differs from the pinned {f.sha256} "
                                f"(for {f.path}); refused", url=url)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a data file is meant to be read by others
        return Path(tmp)
    except BaseException:
        os.unlink(tmp)
        raise


def _receive(url: str, f: RemoteFile, out, timeout: float) -> tuple[str, int]:
    request = urllib.request.Request(url, headers={"User-Agent": "chrono_engine-datasets"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            declared = resp.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > f.size:
                raise DownloadError(f"{url}: the server declares {int(declared):,} bytes, more than the "
                                    f"pinned {f.size:,}; refused", url=url)
            return _copy(resp, out, f.size)
    except DownloadError:
        raise
    except urllib.error.HTTPError as e:
        e.close()
        raise DownloadError(f"{url}: HTTP {e.code} {e.reason}", url=url) from None
    except http.client.IncompleteRead as e:
        raise DownloadError(f"{url}: truncated body, the connection closed after {len(e.partial):,} "
                            f"bytes of a chunk", url=url) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"{url}: download failed ({reason}); without a network, set "
                            "CHRONO_DATA_DIR to a folder holding a copy of the data", url=url) from None
