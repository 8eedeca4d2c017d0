"""Bounded STL formulas: tokens, parser, syntax tree and canonical text.

The language is RTAMT's discrete-time STL expression syntax (so a specification moves
between RTAMT and chrono_engine unchanged), with the usual short forms:

=====================  ==========================================================
signals, numbers       ``v``, ``sensor.temp``; ``0.3``, ``.5``, ``1e-3``, ``-2``
arithmetic             ``+ - * /``, ``abs(e)``, ``sqrt(e)``, ``exp(e)``, ``pow(e, e)``
comparisons            ``>= <= > < ==`` and ``!==`` (``!=`` is accepted as well)
Boolean                ``not``/``!``, ``and``/``&``/``&&``, ``or``/``|``/``||``,
                       ``implies``/``->``, ``iff``/``<->``, ``xor``
future                 ``always[a:b]``/``G[a,b]``, ``eventually[a:b]``/``F[a,b]``,
                       ``until[a:b]``/``U[a,b]``, ``unless[a:b]``/``W[a,b]``, ``next``/``X``
past                   ``historically[a:b]``/``H``, ``once[a:b]``/``O``,
                       ``since[a:b]``/``S``, ``prev``/``Y``; ``rise(e)``, ``fall(e)``
=====================  ==========================================================

Bounds count samples (``a`` and ``b`` are integers, 0 ≤ a ≤ b, ``:`` or ``,`` between
them; a ``s`` suffix is read as RTAMT's default one-second sampling period). Without an
interval a temporal operator is unbounded. Precedence follows RTAMT's grammar (tightest
first): ``* / + -``, comparisons, ``not``, the unary temporal operators, ``until``,
``unless``, ``since``, ``and``, ``or``, ``implies``, ``iff``, ``xor``. Where RTAMT's
grammar groups differently from school arithmetic (``a - b + c`` is ``a - (b + c)`` there,
``a / b * c`` is ``a / (b * c)``) or logic (``a -> b -> c``, ``a < b < c``), the formula is
rejected and asks for parentheses, so a formula accepted here means the same in both tools.
An optional RTAMT-style ``name =`` prefix is ignored.
"""
from __future__ import annotations

import math
import re
from typing import NamedTuple

from ...errors import QueryError

__all__ = ["STLSyntaxError", "Node", "parse_tree", "to_text", "signal_names"]


class STLSyntaxError(QueryError):
    """A formula that cannot be parsed; ``formula`` and ``position`` (0-based) say where."""

    def __init__(self, message: str, formula: str, position: int):
        self.formula = formula
        self.position = position
        caret = f"\n  {formula}\n  {' ' * position}^" if "\n" not in formula else ""
        super().__init__(f"{message} (column {position + 1}){caret}")


class Node(NamedTuple):
    """One node of a formula's syntax tree (hashable, so equal subtrees are shared).

    ``op`` is one of: var, const, add, sub, mul, div, ge, gt, le, lt, eq, ne, not, and, or,
    implies, iff, xor, abs, sqrt, exp, pow, rise, fall, prev, next, always, eventually,
    historically, once, until, unless, since. ``lo``/``hi`` bound a temporal operator
    (None: unbounded); ``value`` is a constant's, ``name`` a signal's.
    """

    op: str
    args: tuple["Node", ...] = ()
    lo: int | None = None
    hi: int | None = None
    value: float | None = None
    name: str | None = None


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<sym><->|->|!==|!=|==|>=|<=|&&|\|\||[-+*/()<>\[\]:,!&|=])
""", re.VERBOSE)


class _Tok(NamedTuple):
    kind: str  # num, name, sym, end
    text: str
    pos: int


# binary operators: token -> (op, precedence, takes an interval); RTAMT's ANTLR levels
_BINARY = {
    "*": ("mul", 26, False), "/": ("div", 25, False), "+": ("add", 24, False),
    "-": ("sub", 23, False),
    ">=": ("ge", 22, False), "<=": ("le", 22, False), ">": ("gt", 22, False),
    "<": ("lt", 22, False), "==": ("eq", 22, False), "!==": ("ne", 22, False),
    "!=": ("ne", 22, False),
    "until": ("until", 12, True), "U": ("until", 12, True),
    "unless": ("unless", 11, True), "W": ("unless", 11, True),
    "since": ("since", 10, True), "S": ("since", 10, True),
    "and": ("and", 9, False), "&": ("and", 9, False), "&&": ("and", 9, False),
    "or": ("or", 8, False), "|": ("or", 8, False), "||": ("or", 8, False),
    "implies": ("implies", 7, False), "->": ("implies", 7, False),
    "iff": ("iff", 6, False), "<->": ("iff", 6, False),
    "xor": ("xor", 5, False),
}
# prefix operators: token -> (op, precedence of the operand, takes an interval)
_PREFIX = {
    "not": ("not", 21, False), "!": ("not", 21, False),
    "always": ("always", 20, True), "G": ("always", 20, True),
    "eventually": ("eventually", 19, True), "F": ("eventually", 19, True),
    "historically": ("historically", 18, True), "H": ("historically", 18, True),
    "once": ("once", 17, True), "O": ("once", 17, True),
    "prev": ("prev", 16, False), "Y": ("prev", 16, False),
    "next": ("next", 15, False), "X": ("next", 15, False),
}
_FUNCTIONS = {"abs": 1, "sqrt": 1, "exp": 1, "pow": 2, "rise": 1, "fall": 1}
_COMPARISONS = {"ge", "gt", "le", "lt", "eq", "ne"}
_KEYWORDS = set(_BINARY) | set(_PREFIX) | set(_FUNCTIONS)
_UNITS = {"s": 1, "ms": None, "us": None, "ns": None, "ps": None}

# canonical text (RTAMT's long forms)
_BINARY_TEXT = {"add": "+", "sub": "-", "mul": "*", "div": "/", "ge": ">=", "gt": ">",
                "le": "<=", "lt": "<", "eq": "==", "ne": "!==", "and": "and", "or": "or",
                "implies": "->", "iff": "<->", "xor": "xor", "until": "until",
                "unless": "unless", "since": "since"}


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise STLSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("end", "", len(text)))
    return toks


class _Parser:
    """Precedence climbing with RTAMT's ANTLR levels (a binary operator at level p takes
    a right operand at level p + 1; a prefix operator's operand is parsed at its level)."""

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.open_parens: list[int] = []

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def fail(self, message: str, tok: _Tok | None = None) -> STLSyntaxError:
        return STLSyntaxError(message, self.text, (tok or self.peek()).pos)

    def expect(self, text: str, what: str, opened: _Tok | None = None) -> _Tok:
        tok = self.peek()
        if tok.text == text and tok.kind == "sym":
            return self.take()
        if opened is not None and text in ")]":
            pair = "parentheses" if text == ")" else "brackets"
            raise STLSyntaxError(f"unbalanced {pair}: {opened.text!r} is never closed "
                                 f"(found {_describe(tok)} where {text!r} was expected)",
                                 self.text, opened.pos)
        raise self.fail(f"expected {what}, found {_describe(tok)}")

    def parse(self) -> Node:
        if (len(self.toks) > 2 and self.toks[0].kind == "name" and self.toks[1].text == "="
                and self.toks[0].text not in _KEYWORDS):
            self.i = 2  # RTAMT assignment form "out = formula"
        if self.peek().kind == "end":
            raise self.fail("empty formula")
        node, _ = self.expr(0)
        tok = self.peek()
        if tok.kind != "end":
            if tok.text == ")":
                raise self.fail("unbalanced parentheses: ')' has no matching '('")
            if tok.text == "]":
                raise self.fail("unbalanced brackets: ']' has no matching '['")
            raise self.fail(f"unexpected {_describe(tok)} after a complete formula")
        return node

    def expr(self, min_prec: int) -> tuple[Node, str | None]:
        left = self.primary()
        bare: str | None = None  # top operator of `left` when built here without parentheses
        while True:
            tok = self.peek()
            info = _BINARY.get(tok.text) if tok.kind in ("sym", "name") else None
            if info is None or info[1] < min_prec:
                return left, bare
            op, prec, timed = info
            self.take()
            lo = hi = None
            if timed and self.peek().text == "[":
                lo, hi = self.interval()
            right, right_bare = self.expr(prec + 1)
            if op == "sub" and right_bare == "add":
                raise self.fail("ambiguous: RTAMT reads 'a - b + c' as 'a - (b + c)'; add "
                                "parentheses to say which you mean", tok)
            if op == "div" and right_bare == "mul":
                raise self.fail("ambiguous: RTAMT reads 'a / b * c' as 'a / (b * c)'; add "
                                "parentheses to say which you mean", tok)
            if op == "implies" and bare == "implies":
                raise self.fail("ambiguous: RTAMT reads 'a -> b -> c' as '(a -> b) -> c'; add "
                                "parentheses to say which you mean", tok)
            if op in _COMPARISONS and bare in _COMPARISONS:
                raise self.fail("chained comparison: RTAMT reads 'a < b < c' as "
                                "'(a < b) < c'; add parentheses to say which you mean", tok)
            left = Node(op, (left, right), lo, hi)
            bare = op

    def interval(self) -> tuple[int, int]:
        opened = self.take()  # '['
        lo = self.bound()
        sep = self.peek()
        if sep.text not in (":", ","):
            raise self.fail(f"expected ':' or ',' between the bounds, found {_describe(sep)}")
        self.take()
        hi = self.bound()
        self.expect("]", "']'", opened)
        if hi < lo:
            raise STLSyntaxError(f"interval [{lo}, {hi}] is empty: the lower bound must not "
                                 f"exceed the upper", self.text, opened.pos)
        return lo, hi

    def bound(self) -> int:
        tok = self.peek()
        if tok.text == "-":
            raise self.fail("interval bounds must be non-negative")
        if tok.kind != "num":
            raise self.fail(f"expected an integer number of steps as interval bound, found "
                            f"{_describe(tok)}")
        self.take()
        value = float(tok.text)
        unit = self.peek()
        if unit.kind == "name" and unit.text in _UNITS:
            self.take()
            if _UNITS[unit.text] is None:
                raise self.fail(f"time unit {unit.text!r}: bounds count samples (a plain "
                                f"number, or 's' for RTAMT's default 1 s sampling)", unit)
        if not math.isfinite(value) or value != int(value):
            raise self.fail(f"interval bound {tok.text} is not a whole number of steps", tok)
        return int(value)

    def primary(self) -> Node:
        tok = self.take()
        text = tok.text
        if tok.kind == "sym" and text == "(":
            node, _ = self.expr(0)
            self.expect(")", "')'", tok)
            return node
        if tok.kind == "num":
            return Node("const", value=float(text))
        if tok.kind == "sym" and text == "-":
            if self.peek().kind == "num" or self.peek().text == "-":
                inner = self.primary()
                if inner.op == "const":
                    return Node("const", value=-inner.value)
            raise self.fail("'-' before an operand only negates a number (RTAMT's grammar); "
                            "write '0 - e' for a signal or expression", tok)
        if tok.kind in ("name", "sym") and text in _PREFIX:
            op, prec, timed = _PREFIX[text]
            lo = hi = None
            if timed and self.peek().text == "[":
                lo, hi = self.interval()
            operand, _ = self.expr(prec)
            return Node(op, (operand,), lo, hi)
        if tok.kind == "name" and text in _FUNCTIONS:
            opened = self.expect("(", f"'(' after {text}")
            args = [self.expr(0)[0]]
            for _ in range(_FUNCTIONS[text] - 1):
                self.expect(",", "','")
                args.append(self.expr(0)[0])
            self.expect(")", "')'", opened)
            return Node(text, tuple(args))
        if tok.kind == "name" and text not in _KEYWORDS:
            return Node("var", name=text)
        if tok.kind == "end":
            raise self.fail("the formula ends where an operand was expected", tok)
        if text == ")":
            raise self.fail("unbalanced parentheses: ')' has no matching '(' (or an operand "
                            "is missing before it)", tok)
        raise self.fail(f"expected an operand, found {_describe(tok)}", tok)


def _describe(tok: _Tok) -> str:
    return "the end of the formula" if tok.kind == "end" else repr(tok.text)


def parse_tree(text: str) -> Node:
    """Parse a formula into its syntax tree (raises :class:`STLSyntaxError`)."""
    if not isinstance(text, str):
        raise QueryError(f"an STL formula must be a string, got {type(text).__name__}")
    return _Parser(text).parse()


def _interval(node: Node) -> str:
    return "" if node.lo is None else f"[{node.lo}:{node.hi}]"


def to_text(node: Node) -> str:
    """Canonical, fully parenthesised text in RTAMT's long-form syntax (parses back equal)."""
    op = node.op
    if op == "var":
        return node.name
    if op == "const":
        return repr(node.value)
    if op in _BINARY_TEXT:
        left, right = (to_text(a) for a in node.args)
        return f"({left} {_BINARY_TEXT[op]}{_interval(node)} {right})"
    if op in _FUNCTIONS:
        return f"{op}({', '.join(to_text(a) for a in node.args)})"
    return f"{op}{_interval(node)}({to_text(node.args[0])})"


def signal_names(node: Node) -> tuple[str, ...]:
    """The signals a formula reads, sorted."""
    names: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.op == "var":
            names.add(n.name)
        stack.extend(n.args)
    return tuple(sorted(names))
