"""How long a run may be: one bound shared by every place that counts a run's steps.

Contract: ``MAX_STEPS`` is the most steps a run may have. Fixed-step runs are refused before
they start beyond it (:func:`hooke.scene_setup.step_count`, naming t_end / dt and the count), as
are fits whose observed times lie past it (:mod:`hooke.fitting.problem`); an adaptive run stops
once its steps have shrunk so far that reaching t_end would take more
(:mod:`hooke.integrators.adaptive`). No module of hooke is imported here, so any can use it.
"""

# No override: 10⁸ steps are 2.5e5 periods of spring1d at its dt, far more than an energy study
# needs, and a longer one runs in pieces, each a hooke.simulate from the state the last one ended
# in, which a fixed-step integrator continues bit for bit (tests/test_scene_validation.py); the
# refusal says so. The smallest models take from about a µs per step (compiled, few frames) to
# tens of µs (through Python, a frame per step): minutes to hours; more is refused with one line
# rather than a run that prints nothing for days (issue 15). It also bounds what an HDF5 int64
# attribute holds.
MAX_STEPS = 10**8
# The most a count of iterations or substeps may be (the integrators' count options, equilibrium's
# and a fit's iterations): each is work repeated, and 10⁹ substeps of a 2-step run, or 10⁶
# iterations of a Newton that never converges (50 minutes on two particles), do nothing better.
MAX_COUNT_OPTION = 10_000
