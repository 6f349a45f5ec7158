"""Plots (Matplotlib, written to PNG files).

``PLOT_KINDS`` names the plots of :mod:`hooke.viz.plots` (its ``PLOTS``, in this order) without
importing Matplotlib: a run checks its output paths before it starts.
"""

PLOT_KINDS = ("energy", "phase", "snapshot", "analytic", "drift", "penetration")
