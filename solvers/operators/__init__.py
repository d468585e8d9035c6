"""Spatial operators: the dealiased spectral transport, finite volumes."""
