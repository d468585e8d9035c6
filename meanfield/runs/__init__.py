"""Runs that step in time: evolve (the PDE) and particles."""
