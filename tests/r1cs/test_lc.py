from hypothesis import given
from hypothesis import strategies as st

from cuzk.field.constants import R
from cuzk.r1cs import ONE, LinearCombination, Variable


def test_variable_keys_separate_inputs_and_aux():
    a, i = Variable.aux(3), Variable.input(3)
    assert a != i and a.index == i.index == 3
    assert i.is_input and not a.is_input
    assert ONE == Variable.input(0)


def test_operators_build_expected_terms():
    x, y = Variable.aux(0), Variable.aux(1)
    lc = 3 * x + y - x - ONE
    assert dict(lc.terms) == {x.key: 2, y.key: 1, ONE.key: R - 1}
    assert len(x - x) == 0  # cancelling terms vanish
    assert dict((-x).terms) == {x.key: R - 1}
    assert dict(LinearCombination.of(7).terms) == {ONE.key: 7}


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-(2**300), 2**300)), max_size=20))
def test_add_term_merges_and_reduces(terms):
    lc = LinearCombination()
    expected: dict[int, int] = {}
    for idx, coeff in terms:
        lc.add_term(Variable.aux(idx), coeff)
        expected[idx] = (expected.get(idx, 0) + coeff) % R
    assert dict(lc.terms) == {Variable.aux(i).key: c for i, c in expected.items() if c}
