"""docs/README.md's map names every source file: a file under ``chrono_engine/``, ``cpp/``,
``benches/``, ``scripts/``, ``fuzz/`` or ``tests/`` that the map does not mention fails
here, so the map cannot drift from the tree."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "README.md"
#: the map's section of each top folder, and the files of it that count as sources
FOLDERS = {"chrono_engine": ("*.py", "*.pyi"), "cpp": ("*.cpp", "*.hpp"), "benches": ("*.py",),
           "scripts": ("*.py", "*.sh"), "fuzz": ("*.py",), "tests": ("*.py",)}


def _sections() -> dict[str, list[str]]:
    """The map's lines under each ``### `folder/` `` heading."""
    out: dict[str, list[str]] = {}
    current = None
    for line in MAP.read_text(encoding="utf-8").splitlines():
        m = re.match(r"###\s+`([\w.]+)/`", line)
        if m:
            current = m.group(1)
            out[current] = []
        elif line.startswith("#"):
            current = None
        elif current is not None:
            out[current].append(line)
    return out


def _sources(folder: str) -> list[Path]:
    base = ROOT / folder
    found = {p for pattern in FOLDERS[folder] for p in base.rglob(pattern)}
    return sorted(p.relative_to(base) for p in found
                  if "__pycache__" not in p.parts and not any(part.startswith(".") for part in p.parts)
                  and not (p.relative_to(base).parts[:1] == ("data",)))


def _named(rel: Path, lines: list[str]) -> bool:
    """A file is named when a line of its folder's section gives its path (``a/b.py``), or,
    for a file in a subfolder, when the subfolder's row (the line naming ``a/``) gives its
    name; a subpackage's ``__init__.py`` is named by its folder's row."""
    path, name = rel.as_posix(), rel.name
    if any(f"`{path}`" in line or f"`{path}," in line for line in lines):
        return True
    if len(rel.parts) == 1:
        return any(re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w])", line) for line in lines)
    top = rel.parts[0] + "/"
    rows = [line for line in lines if f"`{top}" in line]
    if name == "__init__.py" and rows:
        return True
    return any(re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", line) for line in rows)


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_every_source_file_is_in_the_docs_map(folder):
    sections = _sections()
    assert folder in sections, f"docs/README.md has no section for {folder}/"
    missing = [p.as_posix() for p in _sources(folder) if not _named(p, sections[folder])]
    assert not missing, f"docs/README.md's {folder}/ section does not name: {', '.join(missing)}"


def test_the_map_check_sees_a_missing_file():
    """The check itself: a file the map does not mention is reported."""
    lines = ["| `engine.py` | the Engine |", "| `timelang/` | `parser.py`, `zh.py` |"]
    assert _named(Path("engine.py"), lines) and _named(Path("timelang/zh.py"), lines)
    assert _named(Path("timelang/__init__.py"), lines)
    assert not _named(Path("search.py"), lines) and not _named(Path("timelang/en.py"), lines)
    assert not _named(Path("verify/zh.py"), lines)
