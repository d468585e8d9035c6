"""Discretizations of the mean-field PDE, one per (geometry, method)."""
