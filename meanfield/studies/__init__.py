"""Studies built from many runs: compare (PDE vs particles)."""
