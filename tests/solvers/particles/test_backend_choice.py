"""The backend of the direct sums (issue 32, item 4): chosen by the dimension alone, so a
run's rounding never depends on its token count or on a change midway; for a few tokens
the compiled backend (one serial block, ``tiled_serial``) is the cheaper one as well as
the chosen one (measured at n = 4, d = 3: 8.3 against 10.7 us a velocity with BLAS)."""
import numpy as np

from solvers.particles import direct


def test_the_choice_is_a_function_of_the_dimension_alone():
    for d in (1, 2, 3, 16, direct.NUMBA_MAX_DIM, direct.NUMBA_MAX_DIM + 1, 512):
        choices = {direct.choose_backend(n, d) for n in (1, 2, 4, 32, 1000, 10**7)}
        assert len(choices) == 1
    assert direct.choose_backend(4, 3) == "numba"
    assert direct.choose_backend(4, direct.NUMBA_MAX_DIM + 1) == "blas"


def test_auto_is_the_chosen_backend_bit_for_bit_at_small_n():
    rng = np.random.default_rng(4)
    for n, d in ((2, 3), (4, 3), (32, 16)):
        x = rng.standard_normal((n, d))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        auto = direct.exp_kernel_sums(x, x, 4.0, "auto")
        chosen = direct.exp_kernel_sums(x, x, 4.0, direct.choose_backend(n, d))
        for a, b in zip(auto, chosen):
            np.testing.assert_array_equal(a, b)
        blas = direct.exp_kernel_sums(x, x, 4.0, "blas")  # the other: the same sums
        for a, b in zip(auto, blas):
            np.testing.assert_allclose(a, b, rtol=1e-13)
