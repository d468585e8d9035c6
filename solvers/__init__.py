"""Numerics with no attention physics: grids, transforms, operators, time steppers.

``solvers`` receives convolution multipliers and callables, never models; it does not
import ``meanfield``.
"""
