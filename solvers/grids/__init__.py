"""Grids of the PDE solvers: the circle, the Gauss-Legendre sphere, the icosahedral mesh."""
