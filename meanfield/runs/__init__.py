"""Runs: the run engine every task goes through (``engine``), the tasks that step in time
(``evolve``: the PDE; ``particles``: tokens), the executor for many tasks (``executor``)
and the thread policy (``threads``)."""
