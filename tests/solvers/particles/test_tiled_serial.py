"""The numba kernel on the calling thread (``direct._tiled_serial``, taken by
``exp_kernel_sums`` for m <= ROWS queries: no thread pool start) sums each row as the
parallel ``tiled`` does: the same bits, on random shapes across tiles and blocks."""
import numpy as np

from solvers.particles import direct


def test_serial_kernel_gives_the_parallel_kernels_bits():
    tiled = direct.exp_kernels()[0]
    rng = np.random.default_rng(5)
    for _ in range(40):
        m, n, d = (int(rng.integers(1, 80)), int(rng.integers(1, 1100)),
                   int(rng.integers(1, 33)))
        q, y = rng.standard_normal((m, d)), rng.standard_normal((n, d))
        beta, yT = float(rng.uniform(-5, 30)), np.ascontiguousarray(y.T)
        outs = []
        for kernel in (tiled, direct._tiled_serial):
            out = (np.empty((m, d)), np.empty(m), np.empty(m))
            kernel(q, yT, beta, *out)
            outs.append(out)
        for a, b in zip(*outs):
            np.testing.assert_array_equal(a, b)
    # and exp_kernel_sums at m <= ROWS (serial) against a BLAS-free reference: the
    # definition, summed in long double
    x = rng.standard_normal((direct.ROWS, 5))
    s, z, shift = direct.exp_kernel_sums(x, x, 3.0, backend="numba")
    w = np.exp(3.0 * (x @ x.T).astype(np.longdouble) - shift[:, None])
    np.testing.assert_allclose(z, w.sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(s, w @ x, rtol=1e-12, atol=1e-13)
