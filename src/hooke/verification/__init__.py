"""The verification matrix behind ``hooke verify --all``: every integrator × every built-in scene
it accepts — order of convergence, energy error, joint drift, contact distance.

Modules, one job each:
- :mod:`.plan`: what is run — per scene its horizon, compared frames and size; the full and
  quick configurations; the stated limitations;
- :mod:`.reference`: reference trajectories independent of hooke's integrators (analytic, or
  SciPy's DOP853 on the index-1 equations of motion);
- :mod:`.matrix`: the runner — a cell per integrator × scene, its step ladder and measurements;
- :mod:`.report`: the CSV, the printed table and the picture.
"""

from .matrix import Cell, run_matrix
from .plan import FULL, LIMITATIONS, QUICK

__all__ = ["Cell", "FULL", "LIMITATIONS", "QUICK", "run_matrix"]
