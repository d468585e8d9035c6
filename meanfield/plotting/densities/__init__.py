"""Figures of the PDE's densities, by geometry: ``circle``, ``sphere`` and ``zonal`` (each
registers its geometry with ``meanfield.plotting.common`` when imported), the sphere's
grid and cells in ``sphere_grid`` and its Mollweide and orthographic maps in
``sphere_maps``, the zonal curves in ``zonal_grid`` and the linear theory in every
dimension in ``zonal_theory``.

Submodules import each other directly; this package imports nothing."""
