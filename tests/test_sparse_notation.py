"""Index notation (dfopt.ir.sparse.notation): the parser, its faults with their columns, the
queries, TACO's placement of reductions and the printer's round trip."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dfopt.ir.sparse.notation import (
    Access,
    Assignment,
    Binary,
    Literal,
    Neg,
    NotationError,
    Sum,
    accesses,
    index_vars,
    parse,
    reduction_indices,
    tensors,
    to_text,
    with_reductions,
)

A_ij, B_ij, x_j = Access("A", ("i", "j")), Access("B", ("i", "j")), Access("x", ("j",))


def test_spmv_parses_to_a_product():
    assert parse("y(i) = A(i,j) * x(j)") == Assignment(Access("y", ("i",)), Binary("*", A_ij, x_j))


def test_whitespace_is_free():
    assert parse("  y ( i )=A( i , j )*x(j)\n") == parse("y(i) = A(i,j) * x(j)")


def test_a_scalar_result_has_no_indices():
    a = parse("a = B(i,j) * C(i,j)")
    assert a.lhs == Access("a", ())
    assert parse("a() = B(i,j) * C(i,j)") == a


def test_spgemm_and_the_residual():
    assert parse("C(i,j) = A(i,k) * B(k,j)").rhs == Binary("*", Access("A", ("i", "k")), Access("B", ("k", "j")))
    res = parse("y(i) = b(i) - A(i,j) * x(j)").rhs
    assert res == Binary("-", Access("b", ("i",)), Binary("*", A_ij, x_j))


def test_precedence_unary_minus_then_product_then_sum():
    rhs = parse("C(i,j) = -A(i,j) * B(i,j) + D(i,j)").rhs
    assert rhs == Binary("+", Binary("*", Neg(A_ij), B_ij), Access("D", ("i", "j")))


def test_binary_operators_associate_to_the_left():
    D = Access("D", ("i", "j"))
    assert parse("C(i,j) = A(i,j) - B(i,j) - D(i,j)").rhs == Binary("-", Binary("-", A_ij, B_ij), D)
    assert parse("C(i,j) = A(i,j) * B(i,j) * D(i,j)").rhs == Binary("*", Binary("*", A_ij, B_ij), D)
    assert parse("C(i,j) = A(i,j) - (B(i,j) - D(i,j))").rhs == Binary("-", A_ij, Binary("-", B_ij, D))


def test_literals_integers_and_floats():
    rhs = parse("y(i) = 2 * A(i,j) * x(j) + 0.5 * z(i)").rhs
    assert rhs.left.left.left == Literal(2) and isinstance(rhs.left.left.left.value, int)
    assert rhs.right.left == Literal(0.5)
    assert parse("y(i) = 1.5e3 * z(i)").rhs.left == Literal(1500.0)
    assert parse("y(i) = -2 * z(i)").rhs.left == Neg(Literal(2))


def test_mattransmul_with_literals():
    a = parse("y(i) = 2 * A(j,i) * x(j) + 3 * z(i)")
    assert reduction_indices(a) == ("j",)
    assert to_text(with_reductions(a)) == "sum(j, 2 * A(j,i) * x(j)) + 3 * z(i)"


def test_scalar_tensors_and_four_indices():
    a = parse("y(i) = alpha * A(i,j) * x(j)")
    assert tensors(a) == {"y": 1, "alpha": 0, "A": 2, "x": 1}
    assert tensors(parse("a = B(i,j,k,l) * C(i,j,k,l)"))["B"] == 4


def test_the_binary_node_refuses_an_unknown_operator():
    with pytest.raises(ValueError, match="unknown operator '/'"):
        Binary("/", A_ij, B_ij)


FAULTS = [
    ("", 0, "empty text; expected an assignment such as 'y(i) = A(i,j) * x(j)'"),
    ("   ", 0, "empty text; expected an assignment such as 'y(i) = A(i,j) * x(j)'"),
    ("y(i) = A(i,i) * x(i)", 11, "index 'i' is repeated in the access of 'A'; an access names each index once"),
    ("y(i,i) = A(i,j) * x(j)", 4, "index 'i' is repeated in the access of 'y'; an access names each index once"),
    ("y(i,j) = A(i,k) * x(k)", 4, "result index 'j' is not used on the right-hand side; every index of 'y' must index some operand"),
    ("y(i) = y(i) + A(i,j) * x(j)", 7, "the result tensor 'y' also appears on the right-hand side; in-place updates are not supported, give the result its own name"),
    ("y(i) = A(i,j) * A(j)", 16, "tensor 'A' has 1 index here but 2 indices at column 7; a tensor has one order"),
    ("A(i) = B(i,j) * A(j,i)", None, "the result tensor 'A' also appears on the right-hand side"),
    ("C(i,j) = b(i) + c(j)", 14, "operands of '+' have different free indices {i} and {j}; TACO would broadcast the smaller one, which is not supported"),
    ("C(i,j) = A(i,j) - b(i) * c(k)", 16, "operands of '-' have different free indices {i, j} and {i}; TACO would broadcast the smaller one, which is not supported"),
    ("y(i) = A(i,j) * x(j) + 2", 23, "a constant operand of '+' is not supported: it would make every entry of the result nonzero (a dense result); use constants as factors of a product"),
    ("y(i) = -1 - z(i)", 7, "a constant operand of '-' is not supported"),
    ("A(i,j,k,l,m) = B(i,j,k,l,m)", 10, "access of 'A' has more than 4 indices; tensors of rank up to 4 are supported"),
    ("y(i) = A(i,j) * x(j) z(i)", 21, "unexpected 'z' after the expression; expected an operator (+ - *) or the end of the text"),
    ("y(i) = A(i,j) * x(j))", 20, "unexpected ')' after the expression"),
    ("y(i) = A(i,j) *", 15, "expected a tensor access, a number or '(', got the end of the text"),
    ("y(i) = A(i j)", 11, "expected ',' or ')' after index 'i', got 'j'"),
    ("y(i) = A(i,2)", 11, "expected an index variable in the access of 'A', got '2'"),
    ("y(i) = (A(i,j) * x(j)", 21, "expected ')' to close the parenthesis, got the end of the text"),
    ("y(i) A(i,j)", 5, "expected '=' after the result access, got 'A'"),
    ("2 = A(i,j)", 0, "expected the result tensor's name, got '2'"),
    ("y(i) = A(i,j) / x(j)", 14, "unexpected character '/'"),
    ("y(i) = 1e999 * z(i)", 7, "literal 1e999 is not a finite number"),
]


@pytest.mark.parametrize("text, column, message", FAULTS)
def test_every_fault_names_its_column_and_quotes_the_text(text, column, message):
    with pytest.raises(NotationError) as info:
        parse(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.reason.startswith(message)
    if column is not None:
        assert err.column == column
        quoted, caret = str(err).splitlines()[1:3]
        assert quoted == "  " + text.replace("\n", " ")
        assert caret == "  " + " " * column + "^"


def test_a_long_text_is_quoted_around_the_column():
    text = "y(i) = " + " + ".join(f"A{k}(i,j) * x(j)" for k in range(12)) + " + 2"
    with pytest.raises(NotationError) as info:
        parse(text)
    quoted, caret = str(info.value).splitlines()[1:3]
    assert quoted.startswith("  ...") and len(quoted) < 90
    assert quoted[caret.index("^")] == "2"


def test_a_reduced_index_may_differ_between_the_operands_of_a_sum():
    a = parse("y(i) = A(i,j) + B(i,k)")        # each operand sums its own index away
    assert to_text(with_reductions(a)) == "sum(j, A(i,j)) + sum(k, B(i,k))"


def test_queries():
    a = parse("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)")
    assert index_vars(a) == ("i", "j", "k", "l")
    assert reduction_indices(a) == ("k", "l")
    assert [acc.tensor for acc in accesses(a.rhs)] == ["B", "C", "D"]
    assert [acc.tensor for acc in accesses(a)] == ["A", "B", "C", "D"]
    assert tensors(a) == {"A": 2, "B": 3, "C": 2, "D": 2}
    assert index_vars(parse("y(j) = A(i,j) * x(i)")) == ("j", "i")


@pytest.mark.parametrize("text, expected", [
    ("y(i) = b(i) - A(i,j) * x(j)", Binary("-", Access("b", ("i",)), Sum("j", Binary("*", A_ij, x_j)))),
    ("a = B(i,j) * C(i,j)", Sum("i", Sum("j", Binary("*", B_ij, Access("C", ("i", "j")))))),
    ("y(i) = A(i,j) * x(j)", Sum("j", Binary("*", A_ij, x_j))),
    ("y(i) = A(i,j)", Sum("j", A_ij)),
    ("C(i,j) = A(i,j) * B(i,j)", Binary("*", A_ij, B_ij)),
])
def test_reductions_are_placed_as_taco_does(text, expected):
    assert with_reductions(parse(text)) == expected


def test_reductions_of_mttkrp_and_sddmm():
    # k is held by B(i,k,l) * C(k,j) (the left operand of the second product), l by the whole product
    assert to_text(with_reductions(parse("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"))) == \
        "sum(l, sum(k, B(i,k,l) * C(k,j)) * D(l,j))"
    assert to_text(with_reductions(parse("a = B(i,j,k) * C(i,j,k)"))) == "sum(i, sum(j, sum(k, B(i,j,k) * C(i,j,k))))"
    assert to_text(with_reductions(parse("A(i,j) = B(i,j) * C(i,k) * D(k,j)"))) == \
        "sum(k, B(i,j) * C(i,k) * D(k,j))"
    # k is held by the parenthesised product alone, so it is summed there
    assert to_text(with_reductions(parse("A(i,j) = B(i,j) * (C(i,k) * D(k,j))"))) == \
        "B(i,j) * sum(k, C(i,k) * D(k,j))"
    assert to_text(with_reductions(parse("y(i) = -(A(i,j) * x(j))"))) == "-sum(j, A(i,j) * x(j))"


@pytest.mark.parametrize("text", [
    "y(i) = A(i,j) * x(j)",
    "a = B(i,j) * C(i,j)",
    "y(i) = b(i) - A(i,j) * x(j)",
    "y(i) = 2 * A(j,i) * x(j) + 0.25 * z(i)",
    "C(i,j) = A(i,j) - (B(i,j) - D(i,j))",
    "C(i,j) = A(i,j) * (B(i,j) * D(i,j))",
    "C(i,j) = -(A(i,j) + B(i,j)) * --D(i,j)",
    "C(i,j) = (A(i,j) + B(i,j)) * (D(i,j) - E(i,j))",
    "A(i,j,l) = B(i,j,k) * C(k,l)",
    "y(i) = 1e-05 * A(i,j) * x(j)",
])
def test_printing_round_trips(text):
    a = parse(text)
    assert parse(to_text(a)) == a
    assert to_text(parse(to_text(a))) == to_text(a)


def test_printing_is_minimal():
    assert to_text(parse("y(i)=((A(i,j))*(x(j)))+(b(i))")) == "y(i) = A(i,j) * x(j) + b(i)"
    assert to_text(parse("a = s")) == "a = s"


# --- random expressions over (i, j): all operands have the free indices {i, j}, none is a constant

_matrices = st.sampled_from([Access("A", ("i", "j")), Access("B", ("i", "j")), Access("M", ("j", "i"))])
_factors = st.one_of(
    st.sampled_from([Access("u", ("i",)), Access("v", ("j",)), Access("s", ())]),
    st.integers(0, 1000).map(Literal),
    st.floats(0, 1e6, allow_nan=False, allow_infinity=False).map(Literal),
)


def _extend(children):
    return st.one_of(
        st.tuples(children, _factors).map(lambda p: Binary("*", *p)),
        st.tuples(_factors, children).map(lambda p: Binary("*", *p)),
        children.map(Neg),
        st.tuples(st.sampled_from("+-*"), children, children).map(lambda p: Binary(*p)),
    )


_expressions = st.recursive(_matrices, _extend, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(_expressions)
def test_random_expressions_round_trip_through_the_printer(rhs):
    a = Assignment(Access("y", ("i", "j")), rhs)
    assert parse(to_text(a)) == a
