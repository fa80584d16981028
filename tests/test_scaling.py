"""The two action units: every converter in saclstm is protocol.scaling, and its parts agree."""

from __future__ import annotations

import numpy as np

from protocol.scaling import ActionScale, to_env, to_policy

LOW, HIGH = np.array([-2.0, 0.0, 10.0], np.float32), np.array([2.0, 1.0, 30.0], np.float32)


def test_the_maps_are_inverse_and_the_bounds_map_to_plus_minus_one() -> None:
    unit = np.array([[-1.0, 0.0, 1.0], [0.5, -0.25, 0.9]], np.float32)
    np.testing.assert_allclose(to_policy(to_env(unit, LOW, HIGH), LOW, HIGH), unit, atol=1e-6)
    np.testing.assert_array_equal(to_env(np.array([-1.0, -1.0, -1.0], np.float32), LOW, HIGH), LOW)
    np.testing.assert_array_equal(to_env(np.ones(3, np.float32), LOW, HIGH), HIGH)


def test_policy_units_are_clipped_the_policy_cannot_reach_beyond() -> None:
    np.testing.assert_array_equal(to_policy(np.array([-5.0, 2.0, 31.0], np.float32), LOW, HIGH), [-1.0, 1.0, 1.0])


def test_the_per_run_form_is_the_same_map() -> None:
    rng = np.random.default_rng(0)
    actions = rng.uniform(LOW - 1, HIGH + 1, size=(64, 3)).astype(np.float32)
    np.testing.assert_allclose(ActionScale(LOW, HIGH)(actions), to_policy(actions, LOW, HIGH), atol=1e-6)
    exact = ActionScale(LOW, HIGH)(np.stack([LOW, HIGH]))
    np.testing.assert_array_equal(exact, [[-1.0] * 3, [1.0] * 3])
