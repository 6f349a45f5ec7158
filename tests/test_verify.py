"""`hooke verify`: its measured orders and closed-form energy factors on spring1d."""

from __future__ import annotations

import numpy as np
import pytest

import hooke
from hooke.verify import verify

OMEGA2_H2 = (5.0 / 0.5) * 0.005**2  # ω²h² at the verify run's dt


@pytest.fixture(scope="module")
def reports():
    return {report.name: report for report in verify()}


def test_every_integrator_is_reported_with_its_order(reports):
    assert set(reports) == set(hooke.integrators())
    for report in reports.values():
        assert abs(report.measured_order - report.expected_order) <= 0.3, report


@pytest.mark.parametrize("name, change, rtol", [
    ("explicit_euler", OMEGA2_H2, 1e-9),                   # |1 + iωh|² − 1
    ("rk2", OMEGA2_H2**2 / 4, 1e-6),                       # |1 + z + z²/2|² − 1 at z = iωh
    ("implicit_euler_linear", 1 / (1 + OMEGA2_H2) - 1, 1e-9),
    ("rk4", -OMEGA2_H2**3 / 72 + OMEGA2_H2**4 / 576, 1e-3),  # 2e-13 per step: round-off limits
])
def test_energy_factor_matches_closed_form(reports, name, change, rtol):
    np.testing.assert_allclose(reports[name].energy_factor - 1, change, rtol=rtol)


def test_energy_behaviour_classes(reports):
    assert reports["explicit_euler"].behaviour == "grows"
    assert reports["implicit_euler_linear"].behaviour == "decays"
    assert reports["implicit_euler"].behaviour == "decays"
    assert reports["symplectic_euler"].behaviour == "bounded"
