"""The physics: kernels and multipliers, linear theory, the models on grids and on tokens."""
