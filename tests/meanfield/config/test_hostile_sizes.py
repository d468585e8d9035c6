"""Issue 31 items 8, 12 and 13: allocations of size d^2 and of the step count refused
before any work (a ConfigError naming the key and the size, not a MemoryError traceback),
and messages that name the right key and say what to change."""
from __future__ import annotations

import numpy as np
import pytest

import meanfield
from meanfield import ConfigError
from meanfield.config import weights as wmod
from meanfield.model.weighted_attention import Head
from meanfield.runs import budget
from meanfield.studies.transport import convergence as conv
from meanfield.studies.transport.gaussian_convergence import gaussian_convergence

GiB = 2**30


@pytest.fixture
def eight_gib(monkeypatch):
    """A machine with 8 GiB free, whatever this one has."""
    monkeypatch.setattr(budget, "available_memory", lambda: 8 * GiB)

    def no_matrix(*args, **kw):
        raise AssertionError("a weight matrix was drawn")

    monkeypatch.setattr(wmod, "weight_matrix", no_matrix)


@pytest.mark.parametrize("geometry, dim", [("euclidean", 20000), ("sphere", 40000)])
def test_huge_weight_matrices_are_refused_naming_dim(eight_gib, geometry, dim):
    # the MemoryError in head_matrices: 3 x 20000^2 doubles = 9 GiB of Q, K, V
    cfg = {"domain": {"geometry": geometry, "dim": dim},
           "weights": {"value": {"kind": "gaussian", "seed": 1}},
           "time": {"t_final": 1.0, "save_every": 0.5}, "particles": {"n": 16}}
    if geometry == "euclidean":
        cfg["initial"] = {"kind": "gaussian", "covariance": 1.0}
    with pytest.raises(ConfigError, match=f"domain.dim = {dim}.*GiB.*domain.dim <= ") as err:
        meanfield.particles(cfg)
    assert err.value.key == "domain.dim"
    need = float(str(err.value).split("about ")[1].split(" GiB")[0])
    assert need >= 3 * dim**2 * 8 / GiB  # at least Q, K and V themselves


def test_a_tiny_convergence_step_is_refused_before_the_time_table(monkeypatch):
    # time.dt = 1e-9 to t = 1: 2e9 table times (the 3.7 GiB traceback in
    # coupling.table_times), each with a PDE state of 64 doubles
    def no_table(*args, **kw):
        raise AssertionError("the time table was built")

    monkeypatch.setattr(conv.cp, "table_times", no_table)
    cfg = {"model": {"beta": 1.0}, "initial": {"kind": "von_mises", "concentration": 2.0},
           "discretization": {"resolution": 64},
           "time": {"t_final": 1.0, "save_every": 0.5, "dt": 1e-9},
           "convergence": {"n": [100], "replicas": 1, "p": 1}}
    with pytest.raises(ConfigError, match="time.dt = 1e-09.*2e\\+09 times.*GiB") as err:
        conv.convergence(cfg)
    assert err.value.key == "time.dt"


@pytest.mark.parametrize("dt", [0.0, -0.25, float("nan"), True])
def test_gaussian_convergence_refuses_a_step_that_is_not_positive(dt):
    head = Head(np.eye(2), np.eye(2), np.eye(2))
    with pytest.raises(ConfigError, match="dt = .*finite number > 0") as err:
        gaussian_convergence(np.zeros(2), np.eye(2), head, [4], 1, [0.5], dt)
    assert err.value.key == "dt"


def test_heads_as_a_generator_is_a_config_error():
    cfg = {"domain": {"geometry": "euclidean", "dim": 2},
           "initial": {"kind": "gaussian", "covariance": 1.0},
           "weights": {"heads": ({"value": "identity"} for _ in range(2))},
           "time": {"t_final": 1.0, "save_every": 0.5}, "particles": {"n": 8}}
    with pytest.raises(ConfigError, match="weights.heads = <generator.*list") as err:
        meanfield.particles(cfg)
    assert err.value.key == "weights.heads"


def test_the_heads_message_has_balanced_braces():
    cfg = {"domain": {"geometry": "euclidean", "dim": 2},
           "initial": {"kind": "gaussian", "covariance": 1.0},
           "weights": {"heads": [3.0]},
           "time": {"t_final": 1.0, "save_every": 0.5}, "particles": {"n": 8}}
    with pytest.raises(ConfigError) as err:
        meanfield.particles(cfg)
    text = str(err.value)
    assert "{query, key, value}" in text and "}}" not in text
    assert text.count("{") == text.count("}")


def test_quantile_points_in_rd_name_the_geometry():
    cfg = {"domain": {"geometry": "euclidean", "dim": 2},
           "initial": {"kind": "gaussian", "mean": [0.0, 0.0], "covariance": 1.0},
           "time": {"t_final": 1.0, "save_every": 0.5},
           "convergence": {"n": [10], "replicas": 1, "points": "quantile"}}
    with pytest.raises(ConfigError) as err:
        conv.convergence(cfg)
    assert err.value.key == "convergence.points"
    assert "on the sphere" not in str(err.value)
    assert '"euclidean"' in str(err.value) and 'points = "iid"' in str(err.value)


def test_huge_query_and_key_with_rescaled_blame_query_and_key():
    # Q = K = 1e200 I: Q^T K overflows whatever V; the old message blamed weights.value
    cfg = {"domain": {"geometry": "euclidean", "dim": 2},
           "initial": {"kind": "gaussian", "covariance": 1.0},
           "weights": {"query": 1e200, "key": 1e200, "value": "identity"},
           "time": {"t_final": 1.0, "save_every": 0.5},
           "particles": {"n": 8, "rescaled": True}}
    with pytest.raises(ConfigError, match="weights.query and weights.key.*Q\\^T K") as err:
        meanfield.particles(cfg)
    assert err.value.key == "weights.query"


@pytest.mark.parametrize("key", ["heads", "layers"])
def test_the_defaults_template_can_be_uncommented_for_heads(key):
    # config --defaults particles: uncommenting heads (or layers) as its line says, with
    # query, key and value commented out, gives a config that validates (before: the
    # line said nothing, and heads beside the three keys is refused)
    import tomllib

    from meanfield import config as cfgmod
    from meanfield.config.reference import defaults_toml

    lines = defaults_toml("particles").splitlines()
    start = lines.index("[weights]")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("["))
    (line,) = [i for i in range(start, end) if lines[i].startswith(f"# {key} = ")]
    assert "comment those out" in lines[line - 1]
    lines[line] = lines[line][2:]
    for i in range(start, end):
        if lines[i].split(" = ")[0] in ("query", "key", "value"):
            lines[i] = "# " + lines[i]
    cfg = cfgmod.validate(tomllib.loads("\n".join(lines)), "particles")
    assert key in cfg["weights"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (inf - inf in the last logits)
def test_a_repulsive_value_with_rescaled_says_rescaling_cannot_keep_z_bounded():
    # V = -100 I: z = e^{-tV} x grows like e^{100 t}; the logits leave the double range
    # near t = ln(1e154) / 100 ~ 3.5 whatever the step (before: "lower time.dt")
    from meanfield.errors import SolverError

    cfg = {"domain": {"geometry": "euclidean", "dim": 2},
           "initial": {"kind": "gaussian", "covariance": 1.0},
           "weights": {"value": -100.0},
           "time": {"t_final": 10.0, "save_every": 5.0},
           "particles": {"n": 8, "rescaled": True}}
    with pytest.raises(SolverError) as err:
        meanfield.particles(cfg)
    text = str(err.value)
    assert "rescaling cannot keep z bounded" in text and "real part -100" in text
    assert "particles.rescaled = false" in text and "lower time.dt" not in text
    t = float(text.split("at t = ")[1].split(";")[0])
    assert 3.0 < t < 4.0  # ln(sqrt(DBL_MAX)) / 100 = 3.55, for tokens of size ~1


def test_a_huge_pde_value_is_named_when_the_pde_fails():
    # V = 1e300 I: the V = I flow to t = 1e300; the solver's failure named only the
    # resolution (issue 31 item 12)
    from meanfield.errors import SolverError

    with pytest.raises(SolverError) as err:
        meanfield.evolve({"weights": {"value": 1e300}, "time": {"t_final": 1.0}})
    assert str(err.value).startswith("weights.value = 1e+300 multiplies the velocity")
    assert "flow to t = 1e+300" in str(err.value)
