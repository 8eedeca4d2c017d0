"""chrono_engine/_core.pyi against the compiled module it describes: the stub names every public
function and class of ``_core`` and every member of those classes, and nothing ``_core`` lacks;
each function and method takes the arguments of its binding's signature (names, order, which
have defaults), every argument and return annotated; properties are properties.

The bindings' signatures are read from the first line of pybind11's docstrings,
``name(arg: type, ...) -> type``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import chrono_engine
from chrono_engine import _core

STUB = Path(chrono_engine.__file__).parent / "_core.pyi"
# what pybind11 puts in every class's namespace besides the bound members
PYBIND_CLASS_EXTRAS = {"__doc__", "__module__", "__dict__", "__weakref__", "_pybind11_conduit_v1_"}


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def _defs(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Functions, classes and assigned names defined at this level of the stub."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
    return out


def _public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def _bound_members(cls: type) -> set[str]:
    return set(vars(cls)) - PYBIND_CLASS_EXTRAS


def _doc_params(obj, name: str) -> list[tuple[str, bool]]:
    """(name, has default) of each argument in pybind11's signature line for ``obj``."""
    first = (obj.__doc__ or "\n").splitlines()[0]
    assert first.startswith(name + "(") and ") -> " in first, f"{name}: no pybind11 signature in {first!r}"
    inner = first[len(name) + 1:first.rindex(") -> ")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [(p.split(":", 1)[0].strip(), " = " in p) for p in parts]


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    """As :func:`_doc_params` reads them; keyword-only arguments follow a ("*", False)."""
    args = fn.args
    assert not (args.posonlyargs or args.vararg or args.kwarg), \
        f"{fn.name}: the bindings take positional-or-keyword or keyword-only arguments"
    n_plain = len(args.args) - len(args.defaults)
    out = [(a.arg, i >= n_plain) for i, a in enumerate(args.args)]
    if args.kwonlyargs:
        out.append(("*", False))
        out += [(a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return out


def _check_annotated(fn: ast.FunctionDef, where: str) -> None:
    for a in fn.args.args + fn.args.kwonlyargs:
        if a.arg != "self":
            assert a.annotation is not None, f"{where}: argument {a.arg} has no type"
    assert fn.returns is not None, f"{where}: no return type"


def test_stub_names_exactly_the_modules_public_names():
    stub = _public(_defs(_stub_tree().body))
    module = _public(dir(_core))
    assert module - stub == set(), "public names of _core missing from _core.pyi"
    assert stub - module == set(), "_core.pyi names what _core lacks"


def test_stub_classes_name_exactly_their_members():
    stub = _defs(_stub_tree().body)
    classes = [n for n in _public(dir(_core)) if isinstance(getattr(_core, n), type)]
    assert classes, "_core defines classes (Store, Names)"
    for name in classes:
        members = set(_defs(stub[name].body))
        bound = _bound_members(getattr(_core, name))
        assert bound - members == set(), f"members of _core.{name} missing from the stub"
        assert members - bound == set(), f"the stub's {name} names what _core.{name} lacks"


def test_stub_signatures_match_the_bindings():
    stub = _defs(_stub_tree().body)
    checked = 0
    for name in sorted(_public(dir(_core))):
        obj = getattr(_core, name)
        node = stub[name]
        if isinstance(obj, type):
            assert isinstance(node, ast.ClassDef), f"{name} is a class in _core"
            for member, fn in _defs(node.body).items():
                attr = vars(obj)[member]
                where = f"{name}.{member}"
                assert isinstance(fn, ast.FunctionDef), f"{where}: a method or a property in the stub"
                is_prop = any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)
                assert is_prop == isinstance(attr, property), f"{where}: property in one, not in the other"
                if is_prop:
                    assert _stub_params(fn) == [("self", False)], where
                else:
                    assert _stub_params(fn) == _doc_params(attr, member), where
                _check_annotated(fn, where)
                checked += 1
        else:
            assert callable(obj) and isinstance(node, ast.FunctionDef), f"{name} is a function in _core"
            assert _stub_params(node) == _doc_params(obj, name), name
            _check_annotated(node, name)
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize("line, want", [
    ("f(a: int, b: typing.Annotated[numpy.typing.ArrayLike, numpy.int32] | None = None) -> dict",
     [("a", False), ("b", True)]),
    ("f() -> dict", []),
    ("f(self: m.C, x: tuple[int, int], variant: str = '') -> None", [("self", False), ("x", False), ("variant", True)]),
    ("f(self: m.C, *, k: int = 10, m: int) -> None", [("self", False), ("*", False), ("k", True), ("m", False)]),
])
def test_signature_reader(line, want):
    """The reader of pybind11 signature lines the checks above rely on."""
    class Fake:
        __doc__ = line
    assert _doc_params(Fake, "f") == want


def test_py_typed_marker_ships_beside_the_stub():
    assert (STUB.parent / "py.typed").is_file()
    assert STUB.is_file()
