"""Parameter identification from observed motion (issue 18 §2).

``hooke.fit(scene, observed, params, bounds=None, **options)`` fits model parameters to observed
positions by least squares (:mod:`.solve`): SciPy's trust-region Gauss–Newton /
Levenberg–Marquardt (``least_squares``) or L-BFGS-B on the exact adjoint gradient of
:func:`hooke.gradient`, with the uncertainty from the Gauss–Newton Hessian. The observations,
the unknowns (log space for positive quantities) and the residual are :mod:`.problem`'s; reading
observed motion from files is :mod:`hooke.io.observed`'s.
"""

from .solve import FitResult, fit

__all__ = ["FitResult", "fit"]
