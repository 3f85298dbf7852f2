import numba
import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

X_SHAPE, POOL = (1, 5, 7, 3), (3, 2)  # odd, non-square; stride (2, 2) still overlaps in H
CASES = [((1, 1), "valid"), ((2, 2), "valid"), ((1, 1), "same"), ((2, 2), "same")]
IDS = [f"s{s[0]}-{p}" for s, p in CASES]


def _pads(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1, 0, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def _windows(x, pool, strides, padding, fill):
    """Yield (i, j, window (N, ph, pw, C), top, left) over the explicitly padded input."""
    n, h, w, c = x.shape
    ho, top, bottom = _pads(h, pool[0], strides[0], padding)
    wo, left, right = _pads(w, pool[1], strides[1], padding)
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    for i in range(ho):
        for j in range(wo):
            r, s = i * strides[0], j * strides[1]
            yield i, j, xp[:, r:r + pool[0], s:s + pool[1], :], r - top, s - left


def _out(x, pool, strides, padding, dtype=np.float64):
    n, h, w, c = x.shape
    return np.zeros((n, _pads(h, pool[0], strides[0], padding)[0],
                     _pads(w, pool[1], strides[1], padding)[0], c), dtype)


def maxpool_ref(x, pool, strides, padding):
    """float64 max over -inf-padded windows, and the flat (ih*W + iw)*C + c of each max."""
    x = np.asarray(x, np.float64)
    n, h, w, c = x.shape
    y, arg = _out(x, pool, strides, padding), _out(x, pool, strides, padding, np.int64)
    for i, j, win, r0, s0 in _windows(x, pool, strides, padding, -np.inf):
        flat = win.reshape(n, -1, c)
        y[:, i, j] = flat.max(axis=1)
        k = flat.argmax(axis=1)
        arg[:, i, j] = ((r0 + k // pool[1]) * w + s0 + k % pool[1]) * c + np.arange(c)
    return y, arg


def avgpool_ref(x, pool, strides, padding):
    """float64 mean over the in-bounds cells of each window."""
    x = np.asarray(x, np.float64)
    y = _out(x, pool, strides, padding)
    counts = dict(((i, j), win.sum(axis=(1, 2))) for i, j, win, _, _ in
                  _windows(np.ones_like(x), pool, strides, padding, 0.0))
    for i, j, win, _, _ in _windows(x, pool, strides, padding, 0.0):
        y[:, i, j] = win.sum(axis=(1, 2)) / counts[i, j]
    return y


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_maxpool_forward_backward(device, strides, padding):
    x = randn(X_SHAPE, seed=1)
    y_shape = ops.pool2d_output_shape(X_SHAPE, pool_size=POOL, strides=strides, padding=padding)
    y_ref, arg_ref = maxpool_ref(x, POOL, strides, padding)
    y, arg = on(device, np.zeros(y_shape, np.float32), np.zeros(y_shape, np.int32))
    kw = dict(pool_size=POOL, strides=strides, padding=padding)
    ops.maxpool2d_forward(y, arg, on(device, x), **kw)
    assert_close(host(y), y_ref, what="maxpool y")
    np.testing.assert_array_equal(host(arg), arg_ref)

    dy = randn(y_shape, seed=2)
    dx = on(device, np.full(X_SHAPE, 5.0, np.float32))  # overwritten, not accumulated
    ops.maxpool2d_backward(dx, on(device, dy), arg, **kw)
    expected = numeric_grad(lambda v: np.sum(maxpool_ref(v, POOL, strides, padding)[0] * dy), x)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-4, what="maxpool dx")


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_avgpool_forward_backward(device, strides, padding):
    x = randn(X_SHAPE, seed=3)
    y_shape = ops.pool2d_output_shape(X_SHAPE, pool_size=POOL, strides=strides, padding=padding)
    kw = dict(pool_size=POOL, strides=strides, padding=padding)
    y = on(device, np.zeros(y_shape, np.float32))
    ops.avgpool2d_forward(y, on(device, x), **kw)
    assert_close(host(y), avgpool_ref(x, POOL, strides, padding), what="avgpool y")

    dy = randn(y_shape, seed=4)
    dx = on(device, np.full(X_SHAPE, 5.0, np.float32))
    ops.avgpool2d_backward(dx, on(device, dy), **kw)
    expected = numeric_grad(lambda v: np.sum(avgpool_ref(v, POOL, strides, padding) * dy), x)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-4, what="avgpool dx")


def test_same_padding_excludes_padded_cells_from_the_mean(device):
    x = np.ones((1, 3, 3, 1), np.float32)
    y = on(device, np.zeros((1, 2, 2, 1), np.float32))
    ops.avgpool2d_forward(y, on(device, x), pool_size=2, strides=2, padding="same")
    assert_close(host(y), np.ones((1, 2, 2, 1)), what="mean of ones")  # not 0.5 / 0.25


def test_global_avgpool(device):
    x_shape = (2, 3, 5, 3)
    x, dy = randn(x_shape, seed=5), randn((2, 3), seed=6)
    y, dx = on(device, np.zeros((2, 3), np.float32), np.full(x_shape, 5.0, np.float32))
    ops.global_avgpool2d_forward(y, on(device, x))
    assert_close(host(y), x.astype(np.float64).mean(axis=(1, 2)), what="global y")
    ops.global_avgpool2d_backward(dx, on(device, dy))
    expected = numeric_grad(lambda v: np.sum(v.mean(axis=(1, 2)) * dy), x)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-4, what="global dx")


def test_maxpool_backward_ignores_argmax_outside_its_window(device):
    # x (1, 2, 4, 1), 1x2 windows, stride 1x2 valid: windows {0,1} {2,3} / {4,5} {6,7}.
    dy = np.array([1.0, 2.0, 3.0, 4.0], np.float32).reshape(1, 2, 2, 1)
    arg = np.array([1, -1, 9, 2], np.int32).reshape(1, 2, 2, 1)  # -1, 9: out of range; 2: not
    dx = on(device, np.full((1, 2, 4, 1), 9.0, np.float32))      # a cell of window (1, 1)
    ops.maxpool2d_backward(dx, *on(device, dy, arg), pool_size=(1, 2), strides=(1, 2))
    assert_close(host(dx).ravel(), [0, 1, 0, 0, 0, 0, 0, 0], rtol=0, atol=0, what="dx")


@pytest.mark.parametrize("strides,padding", CASES + [((3, 3), "valid"), ((3, 3), "same")],
                         ids=IDS + ["s3-valid", "s3-same"])
def test_maxpool_backward_is_the_scatter_of_dy_in_window_order(device, strides, padding):
    # Ties (many equal maxima) and overlapping windows: dx must be exactly the scatter
    # dx[argmax] += dy in output order (same bits on both devices, run to run).
    x = np.round(randn(X_SHAPE, seed=11)).astype(np.float32)
    kw = dict(pool_size=POOL, strides=strides, padding=padding)
    y_shape = ops.pool2d_output_shape(X_SHAPE, **kw)
    y, arg = on(device, np.zeros(y_shape, np.float32), np.zeros(y_shape, np.int32))
    ops.maxpool2d_forward(y, arg, on(device, x), **kw)
    dy = randn(y_shape, seed=12)
    expected = np.zeros(X_SHAPE, np.float32).reshape(X_SHAPE[0], -1)
    a = host(arg).reshape(X_SHAPE[0], -1)
    for j, k in enumerate(a[0]):
        expected[0, k] += dy.reshape(X_SHAPE[0], -1)[0, j]
    dx = on(device, np.full(X_SHAPE, 5.0, np.float32))
    ops.maxpool2d_backward(dx, on(device, dy), arg, **kw)
    np.testing.assert_array_equal(host(dx).reshape(X_SHAPE[0], -1).view(np.int32),
                                  expected.view(np.int32))


@pytest.mark.parametrize("strides,padding", CASES, ids=IDS)
def test_maxpool_nan_in_nan_out(device, strides, padding):
    # A window holding a NaN outputs NaN and its argmax points at the NaN; dx gets NaN there.
    x = randn(X_SHAPE, seed=13)
    x[0, 2, 3, 1] = np.nan
    x[0, 0, 0, 0] = np.nan  # the first cell of a window: nothing may beat it
    kw = dict(pool_size=POOL, strides=strides, padding=padding)
    y_shape = ops.pool2d_output_shape(X_SHAPE, **kw)
    y_ref, _ = maxpool_ref(np.where(np.isnan(x), np.inf, x), POOL, strides, padding)
    y, arg = on(device, np.zeros(y_shape, np.float32), np.zeros(y_shape, np.int32))
    ops.maxpool2d_forward(y, arg, on(device, x), **kw)
    got, where = host(y), host(arg)
    nan_out = np.isinf(y_ref)  # the windows that contain a NaN
    assert nan_out.any()
    np.testing.assert_array_equal(np.isnan(got), nan_out)
    assert np.isnan(x.reshape(-1)[where[nan_out]]).all()  # argmax at the NaN
    assert_close(got[~nan_out], y_ref[~nan_out], what="finite windows")
    dx = on(device, np.zeros(X_SHAPE, np.float32))
    ops.maxpool2d_backward(dx, on(device, np.ones(y_shape, np.float32)), arg, **kw)
    gdx = host(dx)
    assert gdx[0, 2, 3, 1] > 0 and gdx[0, 0, 0, 0] > 0  # the gradient reaches the NaN cells
    dy = np.ones(y_shape, np.float32)
    dy[0, 0, 0, 0] = np.nan
    ops.maxpool2d_backward(dx, on(device, dy), arg, **kw)
    assert np.isnan(host(dx)[0, 0, 0, 0])  # and a NaN dy reaches its argmax


def test_pool_nan_in_nan_out(device):
    x = randn(X_SHAPE, seed=14)
    x[0, 1, 1, 2] = np.nan
    y = on(device, np.zeros((1, 2, 3, 3), np.float32))
    ops.avgpool2d_forward(y, on(device, x), pool_size=POOL, strides=(2, 2))
    assert np.isnan(host(y)[0, 0, 0, 2]) and np.isnan(host(y)).sum() == 1
    g = on(device, np.zeros((1, 3), np.float32))
    ops.global_avgpool2d_forward(g, on(device, x))
    np.testing.assert_array_equal(np.isnan(host(g)), [[False, False, True]])
    dy = np.zeros((1, 2, 3, 3), np.float32)
    dy[0, 0, 0, 2] = np.nan
    dx = on(device, np.zeros(X_SHAPE, np.float32))
    ops.avgpool2d_backward(dx, on(device, dy), pool_size=POOL, strides=(2, 2))
    assert np.isnan(host(dx)[0, :3, :2, 2]).all() and np.isnan(host(dx)).sum() == 6
    ops.global_avgpool2d_backward(dx, on(device, np.array([[0, np.nan, 0]], np.float32)))
    assert np.isnan(host(dx)[..., 1]).all() and not np.isnan(host(dx)[..., [0, 2]]).any()


def test_maxpool_backward_has_no_float_atomics():
    import inspect

    from kernels_numba.gpu import pool2d

    assert "atomic" not in inspect.getsource(pool2d).replace("no atomics", "")


def test_output_shapes():
    assert ops.pool2d_output_shape((64, 26, 26, 32), pool_size=(2, 2), strides=None) == \
        (64, 13, 13, 32)
    assert ops.pool2d_output_shape((1, 5, 7, 3), pool_size=3, strides=(2, 1),
                                   padding="same") == (1, 3, 7, 3)
    assert ops.pool2d_output_shape((1, 5, 7, 3), pool_size=(3, 2), strides=(2, 2)) == (1, 2, 3, 3)


def test_bad_arguments_name_the_op():
    x = np.zeros(X_SHAPE, np.float32)
    y, arg = np.zeros((1, 3, 6, 3), np.float32), np.zeros((1, 3, 6, 3), np.int32)
    kw = dict(pool_size=POOL, strides=(1, 1))
    with pytest.raises(ValueError, match=r"maxpool2d_forward: pool_size=\(6, 2\) is larger than "
                                         r"the input x.shape=\(1, 5, 7, 3\)"):
        ops.maxpool2d_forward(y, arg, x, pool_size=(6, 2), strides=(1, 1))
    with pytest.raises(ValueError, match="avgpool2d_forward: expected padding in"):
        ops.avgpool2d_forward(y, x, **kw, padding="full")
    with pytest.raises(ValueError, match="avgpool2d_backward: expected strides to be a positive"):
        ops.avgpool2d_backward(x, y, pool_size=POOL, strides=(1, -1))
    with pytest.raises(ValueError, match="pool2d_output_shape: expected pool_size to be a pos"):
        ops.pool2d_output_shape(X_SHAPE, pool_size=(0, 2), strides=None)
    with pytest.raises(TypeError, match="maxpool2d_forward: expected argmax.dtype == int32"):
        ops.maxpool2d_forward(y, arg.astype(np.int64), x, **kw)
    with pytest.raises(ValueError, match=r"maxpool2d_forward: expected y.shape == \(1, 3, 6, 3\)"):
        ops.maxpool2d_forward(y[:, :2].copy(), arg, x, **kw)
    with pytest.raises(ValueError, match=r"maxpool2d_backward: expected argmax.shape == "):
        ops.maxpool2d_backward(x, y, arg[:, :2].copy(), **kw)
    with pytest.raises(ValueError,
                       match=r"maxpool2d_backward: expected dy.shape == \(1, 3, 6, 3\)"):
        ops.maxpool2d_backward(x, np.zeros((1, 3, 6, 2), np.float32), arg, **kw)
    with pytest.raises(TypeError, match="pool_size"):
        ops.maxpool2d_backward(x, y, arg)  # the geometry is required
    with pytest.raises(ValueError, match=r"global_avgpool2d_forward: expected y.shape == \(1, 3\)"):
        ops.global_avgpool2d_forward(np.zeros((3,), np.float32), x)
    with pytest.raises(TypeError, match="global_avgpool2d_backward: expected dy.dtype == float32"):
        ops.global_avgpool2d_backward(x, np.zeros((1, 3)))
    with pytest.raises(ValueError, match="avgpool2d_forward: expected x with 4 dimensions"):
        ops.avgpool2d_forward(y, x[0], **kw)


@pytest.mark.parametrize("shape,pool,strides,padding", [
    ((2, 11, 11, 5), (2, 2), (2, 2), "valid"),   # the last row and column in no window
    ((9, 27, 25, 6), (2, 2), (2, 2), "valid"),   # the same, split over two threads
    ((2, 7, 9, 3), (2, 2), (2, 2), "same"),      # padded top-left cells
    ((1, 9, 8, 4), (2, 3), (3, 3), "valid"),     # gaps between windows
    ((1, 8, 7, 3), (3, 2), (3, 4), "same"),
])
def test_cpu_disjoint_window_backward_matches_the_general_one(shape, pool, strides, padding):
    # The CPU twin runs non-overlapping windows through a one-lookup-per-cell gather and
    # compiles the general (overlapping) gather only for pool > stride: both must give the
    # same bits, with a real argmax and with entries outside their windows.
    from kernels_numba.cpu import pool2d as cpu_pool
    from kernels_numba.cpu._parallel import pack, run

    rng = np.random.default_rng(21)
    x = rng.standard_normal(shape).astype(np.float32)
    ph, pw, sh, sw, ho, wo, pt, pl = cpu_pool.pool_plan(shape, pool, strides, padding)
    y = np.empty((shape[0], ho, wo, shape[3]), np.float32)
    arg = np.empty(y.shape, np.int32)
    cpu_pool.maxpool2d_forward(y, arg, x, pool_size=pool, strides=strides, padding=padding)
    bogus = arg.copy()
    bogus.flat[::3] = rng.integers(-2, x[0].size + 2, bogus.flat[::3].size)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    pv = y.copy()  # the masked form's pooled values: some <= 0, one NaN
    pv.flat[::5], pv.flat[7] = -1.0, np.nan
    for am in (arg, bogus):
        fast, general = np.full_like(x, 7.0), np.full_like(x, 7.0)
        cpu_pool.maxpool2d_backward(fast, dy, am, pool_size=pool, strides=strides,
                                    padding=padding)
        run(cpu_pool._maxpool_overlap_part, pack(general, dy, am, ph, pw, sh, sw, pt, pl,
                                                 cpu_pool.BACKWARD, *cpu_pool._UNMASKED),
            x.size)
        np.testing.assert_array_equal(fast.view(np.int32), general.view(np.int32))
        # masked (conv2d_relu_maxpool_backward's pass): dy * relu'(pv), db += its sums
        db_fast, db_general = np.ones(shape[3], np.float32), np.ones(shape[3], np.float32)
        for call in cpu_pool.masked_backward_calls(fast, dy, pv, am, db_fast, pool, strides,
                                                   padding):
            call()
        sums = np.zeros((numba.get_num_threads(), shape[3]), np.float32)
        run(cpu_pool._maxpool_overlap_part, pack(general, dy, am, ph, pw, sh, sw, pt, pl,
                                                 cpu_pool.MASKED, pv, sums), x.size)
        db_general += sums.sum(axis=0)
        np.testing.assert_array_equal(fast.view(np.int32), general.view(np.int32))
        np.testing.assert_allclose(db_fast, db_general, rtol=1e-5, atol=1e-5)
        relu = np.where(pv > 0, dy, pv - pv)
        expected = np.zeros_like(x)
        cpu_pool.maxpool2d_backward(expected, relu.astype(np.float32), am, pool_size=pool,
                                    strides=strides, padding=padding)
        np.testing.assert_array_equal(fast.view(np.int32), expected.view(np.int32))


def _maxpool_argmax_ref(x, pool, strides, padding):
    """y and argmax by the kernels' rule, cell by cell in (ih, iw) order: a later cell
    wins when it is larger or NaN (ties keep the first, the last NaN wins)."""
    n, h, w, c = x.shape
    y, arg = _out(x, pool, strides, padding), _out(x, pool, strides, padding, np.int64)
    for i, j, win, r0, s0 in _windows(np.asarray(x, np.float64), pool, strides, padding,
                                      -np.inf):
        for b in range(n):
            for ch in range(c):
                best, at = None, None
                for di in range(pool[0]):
                    for dj in range(pool[1]):
                        ih, iw = r0 + di, s0 + dj
                        if not (0 <= ih < h and 0 <= iw < w):
                            continue
                        v = win[b, di, dj, ch]
                        if best is None or v > best or v != v:
                            best, at = v, (ih * w + iw) * c + ch
                y[b, i, j, ch], arg[b, i, j, ch] = best, at
    return y, arg


@pytest.mark.parametrize("strides,padding", [((2, 2), "valid"), ((2, 2), "same"),
                                             ((1, 1), "valid")], ids=["s2-valid", "s2-same", "s1"])
def test_maxpool_2x2_ties_nan_and_inf(device, strides, padding):
    """The usual 2x2 pool (the CPU's whole-window path; partial windows of "same" take the
    general loop): ties keep the first cell, the last NaN of a window wins, -inf and inf
    are values like any other; y and argmax exactly as the cell-by-cell rule."""
    shape = (2, 7, 9, 5)
    x = np.round(randn(shape, seed=31) * 2) / 2  # halves: many ties
    x[0, 0, 0, 0] = x[0, 1, 1, 0] = np.nan  # two NaNs in one window: the second wins
    x[1, 2, 3, 1], x[1, 4, 4, 2], x[0, 5, 6, 3] = -np.inf, np.inf, np.nan
    kw = dict(pool_size=(2, 2), strides=strides, padding=padding)
    y_shape = ops.pool2d_output_shape(shape, **kw)
    y, arg = on(device, np.zeros(y_shape, np.float32), np.zeros(y_shape, np.int32))
    ops.maxpool2d_forward(y, arg, on(device, x), **kw)
    y_ref, arg_ref = _maxpool_argmax_ref(x, (2, 2), strides, padding)
    np.testing.assert_array_equal(host(y), y_ref.astype(np.float32))
    np.testing.assert_array_equal(host(arg), arg_ref)


@pytest.mark.parametrize("shape,pool,strides,padding", [
    ((2, 6, 8, 5), (2, 2), (2, 2), "valid"),     # the CPU's 2x2 part
    ((1, 5, 7, 3), (3, 2), (2, 2), "same"),      # the general window loop, padded
    ((1, 5, 7, 3), (3, 2), (1, 1), "valid"),     # overlapping windows
])
def test_maxpool_forward_with_relu_bias_is_the_pool_of_the_relu(device, shape, pool, strides,
                                                                padding):
    # relu_bias (conv_pool's forward): the pool of relu(x + b), the same bits and argmax
    # as pooling what a ReLU conv's epilogue would have written
    x = np.round(randn(shape, seed=31) * 2) / 2  # ties, zeros and negatives
    x[0, 1, 1, 0], x[0, 2, 3, 1] = np.nan, -np.inf
    b = randn(shape[3], seed=32)
    kw = dict(pool_size=pool, strides=strides, padding=padding)
    out = ops.pool2d_output_shape(shape, **kw)
    z = np.maximum(x + b, 0, dtype=np.float32)
    z[np.isnan(x + b)] = np.nan  # (np.maximum would too; made explicit)
    y_ref, arg_ref = on(device, np.zeros(out, np.float32), np.zeros(out, np.int32))
    ops.maxpool2d_forward(y_ref, arg_ref, on(device, z), **kw)
    y, arg = on(device, np.full(out, 9.0, np.float32), np.zeros(out, np.int32))
    ops.maxpool2d_forward(y, arg, on(device, x), relu_bias=on(device, b), **kw)
    np.testing.assert_array_equal(host(y).view(np.int32), host(y_ref).view(np.int32))
    np.testing.assert_array_equal(host(arg), host(arg_ref))
    with pytest.raises(ValueError, match=r"maxpool2d_forward.*relu_bias"):
        ops.maxpool2d_forward(y, arg, on(device, x), relu_bias=on(device, b[:-1]), **kw)
