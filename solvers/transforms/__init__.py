"""Transforms between grid space and coefficient space: FFT, Legendre, SHT."""
