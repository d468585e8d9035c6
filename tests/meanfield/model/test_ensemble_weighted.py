"""Models with general weights in the ensemble engine (meanfield.model.ensemble): a batch
of systems run by ``simulate_ensemble`` is each system run alone by ``simulate`` (the
reference), and models whose velocity does not take batches are refused before any work."""
from types import SimpleNamespace

import numpy as np
import pytest

from meanfield.errors import ConfigError
from meanfield.model import ensemble as E
from meanfield.model.particles import simulate
from meanfield.model.weighted_attention import Head, pure_velocity, sphere_velocity


def random_head(rng, d, scale=1.0):
    return Head(*(scale * rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3)))


def sphere_model(heads, beta, mask="none", feedforward=None):
    """Post-LN tokens with general weights: ``velocity`` takes (n, d) and (B, n, d)."""
    return SimpleNamespace(on_sphere=True, name="weighted post-LN",
                           velocity=lambda x: sphere_velocity(
                               x, heads, beta=beta, mask=mask, feedforward=feedforward))


def pure_model(heads):
    return SimpleNamespace(on_sphere=False, name="weighted pure",
                           velocity=lambda x: pure_velocity(x, heads))


def row_distance(a, b):
    return float(np.max(np.linalg.norm(np.asarray(a) - np.asarray(b), axis=-1)))


@pytest.mark.parametrize("case", ["one head", "causal", "two heads + relu"])
def test_weighted_sphere_ensemble_equals_simulate_per_system(case):
    rng = np.random.default_rng(21)
    d = 3
    heads = [random_head(rng, d, 2.0) for _ in range(2)]
    model = {"one head": lambda: sphere_model(heads[0], 2.0),
             "causal": lambda: sphere_model(heads[0], 2.0, mask="causal"),
             "two heads + relu": lambda: sphere_model(
                 heads, 1.0, feedforward=(rng.standard_normal((d, d)), "relu"))}[case]()
    x0 = E.uniform_ensemble(4, 6, d, seed=3)
    run = E.simulate_ensemble(model, x0, [0.5, 1.0], dt=0.05)
    assert np.all(run.steps == 20)
    for s in range(4):
        single = simulate(model, x0[s], [0.5, 1.0], dt=0.05)
        assert row_distance(run.states[:, s], single.positions) < 1e-12
    assert row_distance(run.states[-1], x0) > 1e-2   # the tokens moved


def test_weighted_pure_ensemble_in_r_d_and_with_noise_equal_simulate_per_system():
    rng = np.random.default_rng(22)
    head = random_head(rng, 2)
    x0 = rng.standard_normal((3, 5, 2))
    run = E.simulate_ensemble(pure_model(head), x0, [0.4, 0.8], dt=0.02)
    for s in range(3):
        single = simulate(pure_model(head), x0[s], [0.4, 0.8], dt=0.02)
        assert row_distance(run.states[:, s], single.positions) < 1e-12
    # noise on the sphere: system s draws from system_rng(seed, s), as simulate does
    y0 = E.uniform_ensemble(3, 5, 3, seed=4)
    model = sphere_model(random_head(rng, 3), 1.0)
    noisy = E.simulate_ensemble(model, y0, [0.3], kappa=4.0, dt=0.05, seed=9)
    for s in range(3):
        single = simulate(model, y0[s], [0.3], kappa=4.0, dt=0.05, seed=E.system_rng(9, s))
        assert row_distance(noisy.states[:, s], single.positions) < 1e-12


def test_models_whose_velocity_takes_no_batch_are_refused_before_the_run():
    x0 = E.uniform_ensemble(3, 4, 3, seed=5)

    def one_system(x):  # correct for (n, d); x.T of a batch reverses all three axes
        return x @ x.T @ x
    with pytest.raises(ConfigError, match="must take a batch") as err:
        E.simulate_ensemble(SimpleNamespace(on_sphere=True, name="m", velocity=one_system),
                            x0, [1.0], dt=0.1)
    assert err.value.key == "model"

    def mixes(x):  # takes a batch but couples its systems
        return np.broadcast_to(x.mean(axis=0), x.shape) if x.ndim == 3 else x
    with pytest.raises(ConfigError, match="not the velocity of each system alone"):
        E.simulate_ensemble(SimpleNamespace(on_sphere=True, name="m", velocity=mixes),
                            x0, [1.0], dt=0.1)
    with pytest.raises(ConfigError, match="has no on_sphere"):
        E.simulate_ensemble(SimpleNamespace(name="m", velocity=mixes), x0, [1.0], dt=0.1)
    with pytest.raises(ConfigError, match="span reduction holds for AttentionParticles"):
        E.simulate_ensemble(sphere_model(Head.identity(3), 1.0), x0, [1.0], reduce=True)


def test_time_dependent_fields_are_refused_naming_the_model():
    model = SimpleNamespace(on_sphere=False, name="rescaled", time_dependent=True,
                            velocity=lambda z, t: z)
    with pytest.raises(ConfigError, match="the rescaled model's field depends on the time"):
        E.simulate_ensemble(model, np.ones((2, 3, 2)), [1.0], dt=0.1)


def test_the_post_ln_weighted_particles_model_runs_in_an_ensemble_as_alone():
    wp = pytest.importorskip("meanfield.model.weighted_particles")
    rng = np.random.default_rng(23)
    d = 3
    model = wp.WeightedParticles([random_head(rng, d, 2.0), random_head(rng, d)], beta=1.5,
                                 mask="causal")
    x0 = E.uniform_ensemble(5, 7, d, seed=6)
    run = E.simulate_ensemble(model, x0, [0.5, 1.0], dt=0.05)
    for s in range(5):
        single = simulate(model, x0[s], [0.5, 1.0], dt=0.05)
        assert row_distance(run.states[:, s], single.positions) < 1e-12
    assert row_distance(run.states[-1], x0) > 1e-2
