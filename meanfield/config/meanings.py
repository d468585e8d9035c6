"""What each config key means, in one line: the one place the config reference
(``meanfield.config.reference``, ``docs/config_reference.md``) and ``meanfield config
--defaults`` read it from. What a key accepts comes from its checker (``checkers.accepting``)
and its default from its ``Section``; a test fails when a registered key has no line here
or a line here names no registered key.

Keys of the sections validated as a whole are listed from their own tables: ``[initial]``
by kind (``initial.INITIAL_PARAMS``), ``[weights]`` (``weights.HEAD_KEYS`` and ``heads``)
and ``[feedforward]``.
"""
from __future__ import annotations

# One line per section: what it is for.
SECTION_MEANINGS: dict[str, str] = {
    "model": "the dynamics: attention temperature, noise, normalization",
    "domain": "where the tokens live: the circle S^1, the sphere S^{d-1} (zonal densities: "
              "any d), or R^d",
    "discretization": "the grid of the PDE solvers",
    "initial": "the initial density or tokens: a kind and that kind's parameters",
    "time": "the time interval and the steps",
    "particles": "the token system (the finite-n model)",
    "weights": "the attention weights Q, K, V (one or several heads)",
    "feedforward": "a feed-forward layer after attention (absent or empty: none)",
    "output": "where the result goes and how often it is checkpointed",
    "parallel": "how the members of an ensemble or a scan are spread",
    "convergence": "the mean-field convergence study: tokens against the PDE as n grows",
    "contraction": "the contraction study: W_2 decay rates over beta, PDE and tokens",
    "bifurcation": "branches of stationary states of the noisy PDE in kappa or beta",
    "phase_diagram": "the (d, beta, t) phase diagram of pair clustering",
    "normalization": "the normalization rules (Post-LN, Pre-LN, Peri-LN, nGPT, Mix-LN) from "
                     "random tokens (equiangular ODEs)",
    "long_context": "one attention layer as n grows with beta = gamma log n",
    "correlations": "one- and two-point functions of token ensembles, g = f2 - f1 f1 against n",
    "metastability": "the cluster staircase from uniform tokens at large beta",
    "critical_points": "the critical points of the interaction energy of n tokens and "
                       "their Hessian index",
}

# One line per key, "section.key": what it sets (and, for an absent default, what it
# becomes).
MEANINGS: dict[str, str] = {
    "model.beta": "inverse temperature of the attention weights e^{beta <x, y>}",
    "model.kappa": "inverse noise: the diffusion coefficient is 1/kappa (\"inf\": no noise)",
    "model.normalized": "true: SA (softmax rows); false: USA (unnormalized, e^{beta} "
                        "grows the velocity; beta <= 700)",
    "domain.geometry": "the circle S^1, the sphere S^{d-1}, zonal densities on S^{d-1} "
                       "(\"zonal\": functions of the angle to the first axis, the PDE in "
                       "every dimension), or tokens in R^d (\"euclidean\": particle runs "
                       "only, architecture \"pure\")",
    "domain.dim": "the dimension d of R^d; absent: 2 on the circle and in R^d, 3 on the "
                  "sphere and zonal (d > 3 on the sphere: particle runs only; zonal: any "
                  "2 <= d <= 100000)",
    "discretization.method": "PDE scheme: spectral (Fourier / spherical harmonics) or "
                             "finite volumes",
    "discretization.resolution": "circle: grid points; sphere spectral: band limit L <= "
                                 "2047; sphere finite volumes: cells, one of 10 4^k + 2; "
                                 "zonal spectral: band limit L <= 8191 (Gegenbauer "
                                 "degrees); zonal finite volumes: cells in the polar angle; "
                                 "\"auto\" (spectral): from the initial spectrum and the "
                                 "kernel, raised during the run to keep discretization."
                                 "accuracy (docs/schemes.md)",
    "discretization.accuracy": "resolution \"auto\": the largest tail of the spectrum "
                               "(the top eighth of the modes), relative to max rho",
    "discretization.negativity_tolerance": "the run stops when min rho < -allowed x max "
                                           "rho, allowed the largest of this, time."
                                           "tolerance (adaptive steps) and discretization."
                                           "accuracy (resolution \"auto\")",
    "discretization.cfl": "fraction of the stability limit used by the finite-volume steps",
    "discretization.threads": "threads of the FFTs and sums (\"auto\": the machine's cores)",
    "time.t_final": "final time of the run",
    "time.dt": "time step (\"auto\": adaptive, to time.tolerance)",
    "time.save_every": "interval between saved states; absent: t_final / 100",
    "time.tolerance": "PDE (spectral): the error of every saved state, relative to max "
                      "rho, whatever the saves; tokens: error per step of the adaptive "
                      "stepper",
    "particles.n": "number of tokens; absent: 1000 (a token file: its rows; some studies "
                   "their own default)",
    "particles.seed": "seed of the initial tokens and of the noise",
    "particles.architecture": "token update; absent: \"pure\" for tokens in R^d, else "
                              "\"post-ln\"",
    "particles.ngpt_alpha": "nGPT (architecture \"ngpt\"): the step alpha of theta' = "
                            "alpha P(A/|A|)",
    "particles.mix_switch": "Mix-LN (architecture \"mix-ln\"): the time at which Post-LN "
                            "hands over to Pre-LN",
    "particles.sum_method": "interaction sums: direct, or the fast expansions (fourier on "
                            "the circle, harmonic on S^2)",
    "particles.accuracy": "target accuracy of the fast interaction sums",
    "particles.ensemble": "number of independent token runs (compare)",
    "particles.cluster_threshold": "chordal distance below which tokens share a cluster",
    "particles.attention_rank": "store the numerical rank of the attention matrix",
    "particles.rank_tolerance": "relative singular value below which the rank stops",
    "particles.bins": "compare: bins of the L1 gap (circle: arcs, \"auto\" 2 N^(1/3) in "
                      "[8, 256], or 6 arcs across the width 1/max rho of the PDE's most "
                      "concentrated state if more, <= 256; sphere: cells of an "
                      "icosahedral mesh; zonal: intervals of t = <x, e> across the PDE's "
                      "mass)",
    "particles.rescaled": "pure, one head: integrate z = e^{-tV} x (refused where e^{tV} "
                          "cannot be formed at t_final)",
    "particles.mask": "attention mask: none, or causal (token i attends to j <= i)",
    "particles.save_attention": "store the attention matrix (time, particle, key)",
    "particles.integrator": "ode (the continuous-time flow) or layers (the transformer's "
                            "discrete layers x^[k+1] = x^[k] + tau v(x^[k]), then its "
                            "normalization)",
    "particles.layer_step": "the step tau of one layer (integrator \"layers\"); save "
                            "times must be multiples of it",
    "particles.attention": "softmax rows, or sinkhorn: the doubly stochastic scaling "
                           "diag(u) e^L diag(v) of the same kernel (post-ln, pure)",
    "particles.sinkhorn_tolerance": "largest error of the row and column sums of the "
                                    "Sinkhorn attention matrix",
    "particles.cluster_method": "linkage: connected components of the tokens closer than "
                                "cluster_threshold; rank: the rank of that 0/1 matrix "
                                "(the count of [GLPR25, §6.3]'s code)",
    "particles.diagnostics": "the per-frame diagnostics a particle run computes and "
                             "writes (each one's cost per frame: docs/datasets.md); [] "
                             "keeps the tokens only",
    "weights.query": "query matrix Q (a matrix spec)",
    "weights.key": "key matrix K (a matrix spec)",
    "weights.value": "value matrix V (a matrix spec; the PDE takes V = c I only)",
    "weights.per_system": "the phase diagram and the normalization study: draw the random "
                          "kinds afresh for every system (seeds keyed by (seed, system))",
    "weights.layers": "weights that change with depth: a list of tables {query, key, "
                      "value} (or {heads}), one per unit of time, the last one kept",
    "weights.redraw": "weights that change with depth: fresh random matrices every "
                      "`every` units of time, {every, kind, scale | eigenvalues, seed, "
                      "matrices}",
    "weights.heads": "several heads: a list of tables {query, key, value} (instead of the "
                     "three keys; the velocities add up)",
    "feedforward.activation": "the activation sigma of the layer W sigma(attention term); "
                              "required once the table has a key",
    "feedforward.weight": "the matrix W of the layer (a matrix spec)",
    "output.path": "result file; absent: the --out option, else CONFIG.nc",
    "output.checkpoint_every": "seconds of wall time between checkpoints",
    "parallel.workers": "local worker processes (1: serial)",
    "parallel.scheduler": "address of a running dask scheduler (absent: local workers)",
    "convergence.n": "token counts n of the scan",
    "convergence.replicas": "i.i.d. starts per n (one for quantile points)",
    "convergence.p": "the order p of the Wasserstein distance W_p",
    "convergence.points": "initial tokens: i.i.d. samples, or the quantiles (i - 1/2)/n of "
                          "the density (circle, deterministic)",
    "convergence.reference": "sphere, p = 2: the density quantised into reference x n "
                             "equal-mass atoms (0: its grid atoms, an O(h) error)",
    "contraction.beta": "the values of beta, one rate each",
    "contraction.sources": "what is measured: the PDE, the tokens, or both",
    "contraction.fit_below": "rad: the tail rate is fitted where the distance is below this",
    "contraction.fit_above": "rad: ... and above this",
    "contraction.other": "a second initial density (an [initial] table): the distance "
                         "between the two solutions is added; absent: none",
    "contraction.pde": "the PDE source: the grid, or on S^1 without noise the labels "
                       "carried along the characteristics",
    "bifurcation.parameter": "the continued parameter (the other is fixed by [model]; "
                             "\"beta\" needs a finite model.kappa)",
    "bifurcation.start": "start of the parameter range (< stop; kappa > 0, beta >= 0; "
                         "\"auto\": kappa_c/2 over the modes' thresholds, else 1)",
    "bifurcation.stop": "end of the parameter range (\"auto\": 2 kappa_c over the modes' "
                        "thresholds, else 4)",
    "bifurcation.modes": "branches from the uniform state for Fourier modes / degrees "
                         "1..modes (below the resolution)",
    "bifurcation.mode": "continuation (arclength), scan (time integration from starts), or "
                        "map (the transition over a second parameter)",
    "bifurcation.ds": "first arclength step",
    "bifurcation.ds_max": "largest arclength step (>= ds)",
    "bifurcation.points": "points per branch at most",
    "bifurcation.stride": "states saved every stride points",
    "bifurcation.tolerance": "Newton tolerance of the stationary equation",
    "bifurcation.scan_num": "scan: parameter values",
    "bifurcation.scan_starts": "scan: the starts integrated to a steady state",
    "bifurcation.scan_t_max": "scan: longest integration time",
    "bifurcation.scan_tolerance": "scan: steady when the residual norm is below this",
    "bifurcation.map_start": "map: start of the second parameter (beta when parameter = "
                             "kappa, else kappa)",
    "bifurcation.map_stop": "map: end of the second parameter (> map_start)",
    "bifurcation.map_num": "map: values of the second parameter",
    "phase_diagram.dims": "token dimensions d",
    "phase_diagram.beta": "values of beta (increasing)",
    "phase_diagram.times": "times at which the pair probability is recorded (increasing)",
    "phase_diagram.systems": "independent token systems per beta",
    "phase_diagram.threshold": "cosine above which a pair counts as clustered",
    "phase_diagram.tolerance": "error per Dormand-Prince step",
    "phase_diagram.engine": "the integrator: compiled (numba), batched numpy, or torch / "
                            "cupy (installed by the user; their GPU if any)",
    "phase_diagram.batch": "(system, beta) pairs in one member",
    "phase_diagram.freeze": "stop a system once every pair is past the threshold for good",
    "phase_diagram.precision": "the Gram field's inner work (d >= n): double, or single "
                               "(float32; state and step control float64)",
    "normalization.dim": "token dimension d",
    "normalization.systems": "random token systems, each run by every architecture",
    "normalization.chunk": "systems per task",
    "normalization.times": "times at which the mean cosine is recorded",
    "normalization.tolerance": "error per adaptive RK4 step",
    "normalization.fit_floor": "the band of 1 - rho fitted: its floor (< fit_ceiling)",
    "normalization.fit_ceiling": "the band of 1 - rho fitted: its ceiling",
    "normalization.offset_ratio": "the Pre-LN power is fitted from t >= |c| / offset_ratio",
    "normalization.band": "fraction of the systems shaded around the mean",
    "normalization.architectures": "the normalization rules run side by side, each from the "
                                   "same tokens (particles.ngpt_alpha, particles.mix_switch "
                                   "set nGPT's and Mix-LN's)",
    "long_context.rho": "cosine of the equiangular input tokens",
    "long_context.gamma": "beta = gamma log n; absent: [0.5, 1, 1.5] / (1 - rho), below, "
                          "at and above the threshold",
    "long_context.n": "context lengths n",
    "long_context.direct_max": "explicit tokens up to this n (0: none; beyond: the limit "
                               "formula)",
    "long_context.seed": "seed of the random rotation of the explicit tokens",
    "long_context.tolerance": "distance to the limit below which n is reported as "
                              "within it",
    "correlations.n": "numbers of tokens n (g is fitted against them)",
    "correlations.dim": "tokens on S^(dim-1)",
    "correlations.systems": "systems per n, even: taken in independent pairs",
    "correlations.chunk": "systems per member (even)",
    "correlations.times": "saved times (0: the i.i.d. start)",
    "correlations.bins": "bins of the pair angle in [0, pi] (S^1: 2 bins arcs for f1)",
    "correlations.modes": "Fourier modes k of the weak second equation (S^1)",
    "correlations.dt": "RK4 step",
    "correlations.level": "chance that max |g|/stderr passes z_threshold when g = 0",
    "critical_points.n": "numbers of tokens n",
    "critical_points.dim": "tokens on S^(dim-1) (2: the circle, angles)",
    "critical_points.beta": "values of beta (one member per n and beta)",
    "critical_points.families": "start families: iid uniform tokens, k clusters of random "
                                "sizes, n equally spaced tokens on a great circle",
    "critical_points.starts": "starts of each family per n and beta",
    "critical_points.jitter": "standard deviation (radians) of the tangent step moving "
                              "each token of a cluster or equally spaced start",
    "critical_points.tolerance": "a start has converged when max |grad E_beta| < "
                                 "tolerance e^beta/n",
    "critical_points.max_iterations": "Levenberg-Marquardt iterations per start",
    "critical_points.zero_tolerance": "Hessian eigenvalues with |lambda| below this times "
                                      "the largest are zero modes (not in the index)",
    "critical_points.match_tolerance": "two points are one (modulo rotations, reflections "
                                       "and permutations) when their angle gaps (S^1) or "
                                       "sorted Gram rows differ by less",
    "critical_points.seed": "seed of the starts (with n and the family; the same at every "
                            "beta)",
    "metastability.beta": "values of beta (large: long plateaus)",
    "metastability.systems": "token systems per beta",
    "metastability.chunk": "systems per task",
    "metastability.times": "times at which the cluster count is recorded",
    "metastability.tolerance": "error per adaptive RK4 step",
    "metastability.plateau_ratio": "a plateau keeps its count over [t, ratio t]",
    "metastability.collapse_tolerance": "clusters count as collapsed when |S - sum m_a^2| "
                                        "<= this times sum m_a^2",
    "metastability.reduced_model": "run the reduced merging model (clusters as weighted "
                                   "points) from each first plateau",
    "metastability.kde_modes": "count the modes of the KDE of the initial tokens",
    "metastability.bootstrap": "bootstrap resamples for the intervals of the fitted slopes",
    "metastability.confidence": "level of those intervals",
    "metastability.start_caps": "angles of cap centres for a start in well-separated caps "
                                "(empty: uniform start)",
    "metastability.cap_radius": "angular radius of those caps",
}

# The parameters of the [initial] kinds (``initial.INITIAL_PARAMS``) and of a mixture
# component.
INITIAL_MEANINGS: dict[str, str] = {
    "kind": "the initial density or token set; absent: \"perturbed\" (S^1, S^2), "
            "\"uniform\" (S^{d-1}, d > 3), \"gaussian\" (R^d)",
    "mode": "Fourier mode k of the perturbation 1 + amplitude cos(k (theta - phase))",
    "amplitude": "amplitude of the perturbation, in [-1, 1]",
    "phase": "phase of the perturbation (rad)",
    "degree": "degree l of the spherical harmonic (zonal: Gegenbauer P_l(cos theta), "
              "P_l(1) = 1) perturbation",
    "order": "order m of the spherical harmonic, |m| <= l",
    "center": "centre: an angle (circle) or a unit vector of length dim (sphere)",
    "concentration": "von Mises(-Fisher) concentration, in [0, 1e8]",
    "path": "file of samples or tokens (relative to the config file)",
    "bandwidth": "kernel bandwidth of the density estimate (\"auto\": a rule fitted to "
                 "the samples' spread)",
    "components": "mixture: a list of [initial] tables, each with a weight",
    "rho": "cosine <x_i, x_j> of the equiangular tokens, in [-1, 1)",
    "unit_rows": "the token file's rows must have length 1",
    "mean": "mean of the Gaussian tokens (a list of dim numbers; absent: zeros)",
    "covariance": "a number s > 0 (s I) or dim rows of a symmetric positive definite "
                  "matrix",
    "weight": "mixture component: its relative weight (> 0)",
}
