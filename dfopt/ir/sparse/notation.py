"""TACO's tensor index notation: the expression AST, its parser and the reductions it implies.

An assignment names the result on the left and an expression of tensor accesses on the right::

    y(i) = A(i,j) * x(j)            C(i,j) = A(i,k) * B(k,j)          a = B(i,j) * C(i,j)

Indices on the right that the left does not name are summed, each over the smallest subexpression
that holds all its occurrences (:func:`with_reductions`). Precedence: unary minus binds tighter than
``*``, which binds tighter than ``+`` and ``-``; binary operators associate to the left.

>>> a = parse("y(i) = b(i) - A(i,j) * x(j)")
>>> index_vars(a), reduction_indices(a), tensors(a)
(('i', 'j'), ('j',), {'y': 1, 'b': 1, 'A': 2, 'x': 1})
>>> to_text(with_reductions(a))
'b(i) - sum(j, A(i,j) * x(j))'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

MAX_INDICES = 4          # indices of one access: tensors up to rank 4


class NotationError(ValueError):
    """A fault in index-notation text: ``column`` is the 0-based position in ``text``, ``reason``
    the message without the quoted text.

    >>> try:
    ...     parse("y(i) = A(i,i)")
    ... except NotationError as err:
    ...     print(err.column, err.reason)
    11 index 'i' is repeated in the access of 'A'; an access names each index once
    """

    def __init__(self, reason: str, text: str, column: int):
        self.reason, self.text, self.column = reason, text, column
        super().__init__(f"{reason} (column {column})\n{_quote(text, column)}")


def _quote(text: str, column: int, width: int = 72) -> str:
    """The text around ``column`` on one line with a caret under it."""
    flat = re.sub(r"\s", " ", text)
    start = max(0, min(column - width // 2, len(flat) - width))
    shown = flat[start:start + width]
    prefix, suffix = ("..." if start > 0 else ""), ("..." if start + width < len(flat) else "")
    return f"  {prefix}{shown}{suffix}\n  {' ' * (len(prefix) + column - start)}^"


# --- the AST ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Access:
    """``tensor(indices...)``; a scalar tensor has no indices."""

    tensor: str
    indices: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(self.indices))


@dataclass(frozen=True)
class Literal:
    """A numeric constant; integers written without a point or exponent parse as ``int``."""

    value: float


@dataclass(frozen=True)
class Neg:
    """Unary minus."""

    arg: Expr


@dataclass(frozen=True)
class Binary:
    """``left op right`` with ``op`` one of ``+ - *``."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self):
        if self.op not in ("+", "-", "*"):
            raise ValueError(f"unknown operator {self.op!r}; expected one of + - *")


@dataclass(frozen=True)
class Sum:
    """An explicit reduction of ``arg`` over ``index`` (placed by :func:`with_reductions`)."""

    index: str
    arg: Expr


Expr = Access | Literal | Neg | Binary | Sum


@dataclass(frozen=True)
class Assignment:
    """``lhs = rhs``."""

    lhs: Access
    rhs: Expr

    def __str__(self) -> str:
        return to_text(self)


# --- the parser ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*=(),])")


@dataclass(frozen=True)
class _Token:
    kind: str      # num, name, op, end
    text: str
    column: int

    def describe(self) -> str:
        return "the end of the text" if self.kind == "end" else repr(self.text)


def _tokens(text: str) -> list[_Token]:
    out, i = [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        m = _TOKEN.match(text, i)
        if m is None:
            raise NotationError(f"unexpected character {text[i]!r}", text, i)
        kind = m.lastgroup or "op"
        out.append(_Token(kind, m.group(), i))
        i = m.end()
    out.append(_Token("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent over the token list; records the column of every node for later checks."""

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.start: dict[int, int] = {}          # id(node) -> column of its first token
        self.op_col: dict[int, int] = {}         # id(Binary) -> column of its operator
        self.index_col: dict[tuple[int, int], int] = {}   # (id(Access), k) -> column of index k
        self.nodes: list[object] = []            # keeps the nodes alive so their ids stay unique

    def fail(self, reason: str, column: int) -> NoReturn:
        raise NotationError(reason, self.text, column)

    def peek(self) -> _Token:
        return self.toks[self.i]

    def take(self) -> _Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, op: str) -> _Token | None:
        tok = self.peek()
        if tok.kind == "op" and tok.text == op:
            self.i += 1
            return tok
        return None

    def expect(self, op: str, what: str) -> _Token:
        tok = self.accept(op)
        if tok is None:
            got = self.peek()
            self.fail(f"expected {op!r} {what}, got {got.describe()}", got.column)
        return tok

    def note(self, node, column: int):
        self.nodes.append(node)
        self.start[id(node)] = column
        return node

    def assignment(self) -> Assignment:
        if self.peek().kind == "end":
            self.fail("empty text; expected an assignment such as 'y(i) = A(i,j) * x(j)'", 0)
        tok = self.peek()
        if tok.kind != "name":
            self.fail(f"expected the result tensor's name, got {tok.describe()}", tok.column)
        lhs = self.access()
        self.expect("=", "after the result access")
        rhs = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            self.fail(f"unexpected {tok.describe()} after the expression; expected an operator (+ - *) "
                      f"or the end of the text", tok.column)
        return Assignment(lhs, rhs)

    def access(self) -> Access:
        name = self.take()
        indices: list[str] = []
        cols: list[int] = []
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    tok = self.take()
                    if tok.kind != "name":
                        self.fail(f"expected an index variable in the access of {name.text!r}, got "
                                  f"{tok.describe()}", tok.column)
                    if tok.text in indices:
                        self.fail(f"index {tok.text!r} is repeated in the access of {name.text!r}; an access "
                                  f"names each index once", tok.column)
                    if len(indices) == MAX_INDICES:
                        self.fail(f"access of {name.text!r} has more than {MAX_INDICES} indices; tensors of "
                                  f"rank up to {MAX_INDICES} are supported", tok.column)
                    indices.append(tok.text)
                    cols.append(tok.column)
                    if self.accept(")"):
                        break
                    self.expect(",", f"or ')' after index {tok.text!r}")
        node = self.note(Access(name.text, tuple(indices)), name.column)
        for k, col in enumerate(cols):
            self.index_col[id(node), k] = col
        return node

    def expr(self) -> Expr:
        left = self.term()
        while (tok := self.accept("+") or self.accept("-")) is not None:
            left = self.binary(tok, left, self.term())
        return left

    def term(self) -> Expr:
        left = self.unary()
        while (tok := self.accept("*")) is not None:
            left = self.binary(tok, left, self.unary())
        return left

    def binary(self, tok: _Token, left: Expr, right: Expr) -> Binary:
        node = self.note(Binary(tok.text, left, right), self.start[id(left)])
        self.op_col[id(node)] = tok.column
        return node

    def unary(self) -> Expr:
        tok = self.accept("-")
        if tok is not None:
            return self.note(Neg(self.unary()), tok.column)
        return self.primary()

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "num":
            self.take()
            value: float = int(tok.text) if re.fullmatch(r"\d+", tok.text) else float(tok.text)
            if not math.isfinite(value):
                self.fail(f"literal {tok.text} is not a finite number", tok.column)
            return self.note(Literal(value), tok.column)
        if tok.kind == "name":
            return self.access()
        if self.accept("("):
            inner = self.expr()
            self.expect(")", "to close the parenthesis")
            return inner
        self.fail(f"expected a tensor access, a number or '(', got {tok.describe()}", tok.column)
        raise AssertionError("unreachable")

    # --- checks on the whole assignment ---------------------------------------------------------

    def check(self, a: Assignment) -> None:
        rhs = accesses(a.rhs)
        for acc in rhs:
            if acc.tensor == a.lhs.tensor:
                self.fail(f"the result tensor {a.lhs.tensor!r} also appears on the right-hand side; in-place "
                          f"updates are not supported, give the result its own name", self.start[id(acc)])
        first: dict[str, Access] = {}
        for acc in [a.lhs, *rhs]:
            seen = first.setdefault(acc.tensor, acc)
            if len(seen.indices) != len(acc.indices):
                self.fail(f"tensor {acc.tensor!r} has {_count(len(acc.indices))} here but "
                          f"{_count(len(seen.indices))} at column {self.start[id(seen)]}; a tensor has one order",
                          self.start[id(acc)])
        used = {i for acc in rhs for i in acc.indices}
        for k, idx in enumerate(a.lhs.indices):
            if idx not in used:
                self.fail(f"result index {idx!r} is not used on the right-hand side; every index of "
                          f"{a.lhs.tensor!r} must index some operand", self.index_col[id(a.lhs), k])
        total = Counter(i for acc in rhs for i in acc.indices)
        reduced = {i for i in total if i not in a.lhs.indices}
        for node in _walk(a.rhs):
            if isinstance(node, Binary) and node.op in "+-":
                self.check_union(node, total, reduced)

    def check_union(self, node: Binary, total: Counter, reduced: set[str]) -> None:
        for side in (node.left, node.right):
            if not accesses(side):
                self.fail(f"a constant operand of {node.op!r} is not supported: it would make every entry of the "
                          f"result nonzero (a dense result); use constants as factors of a product",
                          self.start[id(side)])
        free = [_free_indices(side, total, reduced) for side in (node.left, node.right)]
        if set(free[0]) != set(free[1]):
            sets = " and ".join("{" + ", ".join(f) + "}" for f in free)
            self.fail(f"operands of {node.op!r} have different free indices {sets}; TACO would broadcast the "
                      f"smaller one, which is not supported", self.op_col[id(node)])


def _count(n: int) -> str:
    return f"{n} index" if n == 1 else f"{n} indices"


def _walk(expr: Expr) -> Iterator[Expr]:
    """Every node of ``expr`` in pre-order."""
    yield expr
    if isinstance(expr, Binary):
        yield from _walk(expr.left)
        yield from _walk(expr.right)
    elif isinstance(expr, Neg | Sum):
        yield from _walk(expr.arg)


def _free_indices(expr: Expr, total: Counter, reduced: set[str]) -> tuple[str, ...]:
    """Indices of ``expr`` in first-appearance order, less the reductions it holds every occurrence of."""
    here = Counter(i for acc in accesses(expr) for i in acc.indices)
    return tuple(i for i in here if not (i in reduced and here[i] == total[i]))


def parse(text: str) -> Assignment:
    """Parse one assignment; every fault raises :class:`NotationError` with its column.

    >>> parse("a = B(i,j) * C(i,j)")
    Assignment(lhs=Access(tensor='a', indices=()), rhs=Binary(op='*', left=Access(tensor='B', indices=('i', 'j')), \
right=Access(tensor='C', indices=('i', 'j'))))
    >>> parse("y(i) = 2 * -A(i,j) * x(j)").rhs.left
    Binary(op='*', left=Literal(value=2), right=Neg(arg=Access(tensor='A', indices=('i', 'j'))))
    """
    parser = _Parser(text)
    a = parser.assignment()
    parser.check(a)
    return a


# --- queries ------------------------------------------------------------------------------------

def accesses(expr: Expr | Assignment) -> list[Access]:
    """The accesses of an expression (or an assignment, the result first), left to right.

    >>> [acc.tensor for acc in accesses(parse("C(i,j) = A(i,k) * B(k,j)"))]
    ['C', 'A', 'B']
    """
    if isinstance(expr, Assignment):
        return [expr.lhs, *accesses(expr.rhs)]
    return [node for node in _walk(expr) if isinstance(node, Access)]


def index_vars(a: Assignment) -> tuple[str, ...]:
    """Every index variable in first-appearance order, the result's first.

    >>> index_vars(parse("y(j) = A(i,j) * x(i)"))
    ('j', 'i')
    """
    return tuple(dict.fromkeys(i for acc in accesses(a) for i in acc.indices))


def reduction_indices(a: Assignment) -> tuple[str, ...]:
    """Indices of the right-hand side that the result does not have, in first-appearance order.

    >>> reduction_indices(parse("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"))
    ('k', 'l')
    """
    rhs = dict.fromkeys(i for acc in accesses(a.rhs) for i in acc.indices)
    return tuple(i for i in rhs if i not in a.lhs.indices)


def tensors(a: Assignment) -> dict[str, int]:
    """Tensor name -> order, the result included, in first-appearance order.

    >>> tensors(parse("a = B(i,j) * C(i,j)"))
    {'a': 0, 'B': 2, 'C': 2}
    """
    out: dict[str, int] = {}
    for acc in accesses(a):
        out.setdefault(acc.tensor, len(acc.indices))
    return out


def with_reductions(a: Assignment) -> Expr:
    """The right-hand side with a :class:`Sum` per reduction index, placed as TACO does: around the
    smallest subexpression that holds every occurrence of the index; several at one place nest in
    first-appearance order, the first outermost.

    >>> to_text(with_reductions(parse("a = B(i,j) * C(i,j)")))
    'sum(i, sum(j, B(i,j) * C(i,j)))'
    >>> to_text(with_reductions(parse("y(i) = A(i,j) * x(j) + z(i)")))
    'sum(j, A(i,j) * x(j)) + z(i)'
    """
    total = Counter(i for acc in accesses(a.rhs) for i in acc.indices)
    reduced = reduction_indices(a)

    def place(expr: Expr) -> Expr:
        children: tuple[Expr, ...]
        if isinstance(expr, Binary):
            out: Expr = Binary(expr.op, place(expr.left), place(expr.right))
            children = (expr.left, expr.right)
        elif isinstance(expr, Neg | Sum):
            inner = place(expr.arg)
            out = Neg(inner) if isinstance(expr, Neg) else Sum(expr.index, inner)
            children = (expr.arg,)
        else:
            out, children = expr, ()
        here = Counter(i for acc in accesses(expr) for i in acc.indices)
        below = [Counter(i for acc in accesses(c) for i in acc.indices) for c in children]
        for idx in reversed(reduced):
            if here[idx] == total[idx] and not any(b[idx] == total[idx] for b in below):
                out = Sum(idx, out)
        return out

    return place(a.rhs)


# --- printing -----------------------------------------------------------------------------------

def _precedence(expr: Expr) -> int:
    if isinstance(expr, Binary):
        return 1 if expr.op in "+-" else 2
    if isinstance(expr, Neg):
        return 3
    if isinstance(expr, Literal) and expr.value < 0:
        return 3
    return 4


def to_text(node: Expr | Assignment) -> str:
    """Index-notation text of an expression or assignment; :func:`parse` reads it back to an equal
    assignment. A :class:`Sum` prints as ``sum(index, expr)``, which is for reading only.

    >>> to_text(parse("y(i)=-(A(i,j)*x(j))+(b(i)-c(i))"))
    'y(i) = -(A(i,j) * x(j)) + (b(i) - c(i))'
    """
    if isinstance(node, Assignment):
        return f"{to_text(node.lhs)} = {to_text(node.rhs)}"
    if isinstance(node, Access):
        return f"{node.tensor}({','.join(node.indices)})" if node.indices else node.tensor
    if isinstance(node, Literal):
        return str(node.value) if isinstance(node.value, int) else repr(float(node.value))
    if isinstance(node, Sum):
        return f"sum({node.index}, {to_text(node.arg)})"
    if isinstance(node, Neg):
        inner = to_text(node.arg)
        return f"-({inner})" if _precedence(node.arg) < 3 else f"-{inner}"
    if isinstance(node, Binary):
        p = _precedence(node)
        left, right = to_text(node.left), to_text(node.right)
        if _precedence(node.left) < p:
            left = f"({left})"
        if _precedence(node.right) <= p:
            right = f"({right})"
        return f"{left} {node.op} {right}"
    raise TypeError(f"expected an index-notation node, got {type(node).__name__}")
