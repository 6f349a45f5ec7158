"""Plots (Matplotlib, written to PNG files)."""
