import numpy as np
import pytest

from faircert import Domain, Feature, PropertyError
from faircert.options import check_time_limit
from faircert.properties import individual_fairness

DOM = Domain(
    (
        Feature("age", "integer", 0, 10),
        Feature("sex", "binary", 0, 1),
        Feature("race", "categorical", 0, 3),
        Feature("hours", "real", 0.0, 2.0),
        Feature("const", "integer", 3, 3),
    )
)


def test_several_protected_and_epsilon():
    prop = individual_fairness(DOM, "sex,race", epsilon={"age": 2, "hours": 0.5})
    assert prop.protected == (1, 2)
    assert prop.free == [0, 3, 4]
    np.testing.assert_array_equal(prop.epsilon, [2, 0, 0, 0.5, 0])
    assert prop.epsilon_by_name == {"age": 2.0, "hours": 0.5}


def test_epsilon_rate_floors_discrete_widths():
    prop = individual_fairness(DOM, ["sex"], epsilon_rate=0.25)
    np.testing.assert_allclose(prop.epsilon, [2, 0, 0, 0.5, 0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(protected="gender"), "unknown feature 'gender'"),
        (dict(protected="hours"), "real-valued"),
        (dict(protected="const"), "has one value"),
        (dict(protected="sex", epsilon={"sex": 1}), "epsilon on protected feature"),
        (dict(protected="sex", epsilon={"age": -1}), ">= 0"),
        (dict(protected=None), "no protected feature"),
        (dict(protected="sex", kappa=1.5), "kappa"),
        (dict(protected=True), "by name or position, got True"),
        (dict(protected=2.5), "by name or position, got 2.5"),
    ],
)
def test_bad_properties(kwargs, message):
    with pytest.raises(PropertyError if "unknown" not in message else Exception, match=message):
        individual_fairness(DOM, **kwargs)


@pytest.mark.parametrize("value", [-1.0, 0.0, float("nan")])
def test_bad_time_limits(value):
    with pytest.raises(PropertyError, match="time limit"):
        check_time_limit(value)
