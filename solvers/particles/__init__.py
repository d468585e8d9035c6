"""Interacting particles on S^{d-1}: direct and fast interaction sums."""
