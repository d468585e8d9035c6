"""Initial densities (circle, sphere) and token samplers."""
