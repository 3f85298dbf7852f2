"""A fresh machine's first fit: the one parallel loop (kernels_numba.cpu._parallel), the
compile hook and its message, and numba's cache for a read-only (non-editable) install."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernels_numba
from kernels_numba.cpu import (_parallel, activation, dense, dropout, gemm, pool2d,
                               pool2d_average)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bits(a):
    return a.view(np.uint32 if a.dtype == np.float32 else np.int32)


# -- split paths give the serial path's bits ------------------------------------------

@pytest.mark.parametrize("shape,pool,strides,padding", [
    ((3, 33, 29, 37), (2, 2), (2, 2), "valid"),   # big enough to split, odd sizes
    ((2, 41, 23, 40), (3, 3), (2, 2), "same"),    # overlapping windows, padded edges
])
def test_maxpool_split_matches_serial(shape, pool, strides, padding):
    assert _parallel.split(int(np.prod(shape)))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    ph, pw, sh, sw, ho, wo, pt, pl = pool2d.pool_plan(x.shape, pool, strides, padding)
    y = np.empty((shape[0], ho, wo, shape[3]), np.float32)
    am = np.empty(y.shape, np.int32)
    pool2d.maxpool2d_forward(y, am, x, pool_size=pool, strides=strides, padding=padding)
    # the same part as one block on this thread, and (2x2 "valid") the general window loop
    parts = [pool2d._maxpool_part]
    if pool2d._whole_2x2(ph, pw, padding):
        parts.insert(0, pool2d._maxpool_2x2_part)
    for part in parts:
        y1, am1 = np.empty_like(y), np.empty_like(am)
        part.serial(_parallel.pack(y1, x, am1, ph, pw, sh, sw, pt, pl, 0, *pool2d._UNMASKED))
        np.testing.assert_array_equal(_bits(y), _bits(y1))
        np.testing.assert_array_equal(am, am1)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx = np.full_like(x, 7.0)
    pool2d.maxpool2d_backward(dx, dy, am, pool_size=pool, strides=strides, padding=padding)
    dx1 = np.full_like(x, 7.0)
    pv, sums = pool2d._UNMASKED  # (read only by the masked form)
    pool2d._maxpool_backward(dx1, dy, am, ph, pw, sh, sw, pt, pl, 0, shape[0] * shape[1], pv,
                             sums[0], False)
    np.testing.assert_array_equal(_bits(dx), _bits(dx1))
    # The gather equals a float64 scatter of dy to each window's argmax.
    ref = np.zeros(x.size)
    for flat, g in zip((am + np.arange(shape[0])[:, None, None, None] * x[0].size).ravel(),
                       dy.ravel()):
        ref[flat] += g
    np.testing.assert_allclose(dx.ravel(), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_avgpool_split_matches_serial(padding):
    shape, pool, strides = (3, 31, 29, 37), (3, 3), (2, 2)
    assert _parallel.split(int(np.prod(shape)))
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    ph, pw, sh, sw, ho, wo, pt, pl = pool2d.pool_plan(x.shape, pool, strides, padding)
    y = np.empty((shape[0], ho, wo, shape[3]), np.float32)
    pool2d.avgpool2d_forward(y, x, pool_size=pool, strides=strides, padding=padding)
    y1 = np.empty_like(y)
    pool2d_average._avgpool_forward(y1, x, ph, pw, sh, sw, pt, pl, 0, shape[0] * ho)
    np.testing.assert_array_equal(_bits(y), _bits(y1))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dx1 = np.empty_like(x), np.empty_like(x)
    pool2d.avgpool2d_backward(dx, dy, pool_size=pool, strides=strides, padding=padding)
    pool2d_average._avgpool_backward(dx1, dy, ph, pw, sh, sw, pt, pl, 0, shape[0] * shape[1])
    np.testing.assert_array_equal(_bits(dx), _bits(dx1))
    g = np.empty((shape[0], shape[3]), np.float32)
    pool2d.global_avgpool2d_forward(g, x)
    np.testing.assert_allclose(g, x.astype(np.float64).mean(axis=(1, 2)), rtol=1e-6, atol=1e-7)
    g1 = np.empty_like(g)
    pool2d_average._global_avgpool_rows(g1, x.reshape(shape[0], -1, shape[3]),
                                        np.empty(shape[3]), 0, shape[0])
    np.testing.assert_array_equal(_bits(g), _bits(g1))
    gx = np.empty_like(x)
    pool2d.global_avgpool2d_backward(gx, g)
    np.testing.assert_allclose(gx, np.broadcast_to(g[:, None, None, :] / (31 * 29), shape),
                               rtol=1e-6)


def test_dropout_split_matches_serial():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 40001)).astype(np.float32)
    x[1, 2] = np.nan
    key = dropout.dropout_key(12345, 2 ** 40 + 7)
    rate, keep = np.float32(0.3), np.float32(1 / 0.7)
    y, mask = np.empty_like(x), np.empty_like(x)
    dropout.dropout_forward(y, mask, x, rate, keep, key)
    y1, m1 = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
    dropout._dropout_forward(y1, m1, x.ravel(), rate, keep, key, 0, x.size)
    np.testing.assert_array_equal(_bits(mask.ravel()), _bits(m1))
    np.testing.assert_array_equal(_bits(y.ravel()), _bits(y1))
    assert np.isnan(y[1, 2])  # NaN * 0 is NaN too (IEEE)
    assert abs((mask == 0).mean() - 0.3) < 0.01  # the draws are uniform


@pytest.mark.parametrize("kind", ["relu", "gelu", "softmax", "log_softmax"])
def test_activation_split_matches_serial(kind):
    """The per-kind parts split across threads give the one-block bits, both directions."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((301, 131)).astype(np.float32) * 3
    x[2, 3] = np.nan
    assert _parallel.split(x.size)
    y, dx = np.empty_like(x), np.empty_like(x)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    activation.activation_forward(y, x, kind=kind)
    activation.activation_backward(dx, dy, x, y, kind=kind)
    if kind in activation._ROW_PARTS:
        forward, backward = activation._ROW_PARTS[kind]
        y1, dx1 = np.empty_like(x), np.empty_like(x)
        forward.serial(_parallel.pack(y1, x))
        backward.serial(_parallel.pack(dx1, dy, y))
        assert np.isnan(y[2]).all() and not np.isnan(y[3]).any()  # NaN stays in its row
    else:
        forward, backward = activation._parts(kind)
        y1, dx1 = np.empty(x.size, np.float32), np.empty(x.size, np.float32)
        forward.serial(_parallel.pack(y1, x.ravel(), 0))
        s = y if kind in activation.USES_Y else x
        backward.serial(_parallel.pack(dx1, dy.ravel(), s.ravel(), 0))
        assert np.isnan(y[2, 3]) and np.isnan(dx[2, 3])
    np.testing.assert_array_equal(_bits(y.ravel()), _bits(y1.ravel()))
    np.testing.assert_array_equal(_bits(dx.ravel()), _bits(dx1.ravel()))
    if kind == "relu":  # against float64: the select is exact
        np.testing.assert_array_equal(y, np.where(x > 0, x, np.where(np.isnan(x), x, 0)))


@pytest.mark.parametrize("activation", ["relu", "linear", "sigmoid"])
def test_dense_bias_activation_split_matches_serial(activation):
    rng = np.random.default_rng(1)
    rows, cols = 517, 515  # above PARALLEL_MIN_SIZE with more than 8 rows
    assert rows * cols >= dense.PARALLEL_MIN_SIZE
    pre = rng.standard_normal((rows, cols)).astype(np.float32)
    pre[3, 4] = np.nan
    b = rng.standard_normal(cols).astype(np.float32)
    code = dense.KIND_CODES[activation]
    split = pre.copy()
    part = dense._bias_activation_part(code)
    _parallel.run_parts(part, _parallel.pack(split, b, (1 << 8) | code))
    serial = pre.copy()
    part.serial(_parallel.pack(serial, b, (1 << 8) | code))
    np.testing.assert_array_equal(_bits(split), _bits(serial))
    z = pre.astype(np.float64) + b
    ref = {"relu": np.maximum(z, 0), "linear": z, "sigmoid": 1 / (1 + np.exp(-z))}[activation]
    ref[3, 4] = np.nan
    np.testing.assert_allclose(serial, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,n,k,accumulate", [(301, 67, 129, False), (65, 303, 97, True),
                                               (9, 17, 20011, True)])
def test_gemm_split_blocks(m, n, k, accumulate):
    """Rows, columns and K-slices (partials added in order), against float64."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((k, m)).astype(np.float32).T  # a transposed view: a BLAS flag
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b + (c if accumulate else 0)
    gemm.gemm(c, a, b, accumulate=accumulate)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def test_f32_bits_round_trip():
    for value in (0.0, -0.0, 1.0, 0.1, -3.25e38, np.inf, np.nan):
        bits = _parallel.f32_bits(value)
        assert np.int32(bits).view(np.float32).tobytes() == np.float32(value).tobytes()


# -- the compile hook (child processes: each needs its own numba state) -----------------

_HOOK_CHILD = textwrap.dedent("""
    import numpy as np
    import kernels_numba
    from kernels_numba.cpu import pool2d
    calls = []
    kernels_numba.on_first_compile(lambda: calls.append(1))
    x = np.random.default_rng(0).random((1, 5, 3, 2), dtype=np.float32)
    y = np.empty((1, 2, 1, 2), np.float32); am = np.empty(y.shape, np.int32)
    for _ in range(2):  # the second call compiles nothing
        pool2d.maxpool2d_forward(y, am, x, pool_size=(2, 2), strides=(2, 2))
    print("CALLS", len(calls), kernels_numba.kernels_compiled())
""")


def _child(code, env, cwd=ROOT, prefix=()):
    run = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout + run.stderr


# The compile-lists tests count this process's compiles: no compile-ahead helper (which
# would take some; tests/kernels_numba/test_compile_ahead.py tests it).
_ALONE = {"KERNELS_NUMBA_COMPILE_AHEAD": "0"}


def test_compile_hook_fires_once_and_not_on_a_cache_hit(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), **_ALONE}
    assert "CALLS 1 True" in _child(_HOOK_CHILD, env)   # empty cache: compiled, told once
    assert "CALLS 0 False" in _child(_HOOK_CHILD, env)  # same cache: loaded, silent


def test_compile_hook_unregisters():
    remove = kernels_numba.on_first_compile(lambda: None)
    remove()
    remove()  # twice is harmless


_ACTIVATION_CHILD = textwrap.dedent("""
    import numpy as np
    from numba.core import event
    from kernels_numba.cpu import activation
    names = []
    class Log(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            if fn.__module__.startswith("kernels_numba"):  # not numba's own overloads
                names.append(fn.__qualname__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Log())
    for shape in ((3, 5), (64, 26, 26, 32)):  # one block and split: the same compile
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        y, dx = np.empty_like(x), np.empty_like(x)
        for kind in ("relu", "softmax"):
            activation.activation_forward(y, x, kind=kind)
            activation.activation_backward(dx, x, x, y, kind=kind)
    print("COMPILED", sorted(names))
""")


def test_activations_compile_one_part_per_kind_and_direction(tmp_path):
    """ReLU and softmax, small and large: four parts and the one parallel loop, nothing
    else (each extra compiled function costs a fresh machine ~0.1-1 s on its first fit)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_NUM_THREADS": "2",
           **_ALONE}
    out = _child(_ACTIVATION_CHILD, env)
    expected = sorted(["_relu_forward_part", "_relu_backward_part", "_softmax_forward_part",
                       "_softmax_backward_part", "_drive"])
    assert f"COMPILED {expected}" in out, out[-2000:]


_CNN_KERNELS_CHILD = textwrap.dedent("""
    import numpy as np
    from numba.core import event
    from kernels_numba.cpu import dense, loss, optim, pool2d
    from kernels_numba.ops.activation import KIND_CODES
    names = []
    class Log(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            names.append(f"{fn.__module__.split('.')[0]}.{fn.__qualname__}")
        def on_end(self, ev):
            pass
    event.register("numba:compile", Log())
    rng = np.random.default_rng(0)
    for rows in (3, 2000):  # one block and split: the same compiles
        y = rng.standard_normal((rows, 32)).astype(np.float32)
        b = rng.standard_normal(32).astype(np.float32)
        dense.bias_activation(y, b, KIND_CODES["relu"])
        dense.bias_activation(y, b, KIND_CODES["linear"])
        dense.bias_activation(y, None, KIND_CODES["relu"])
    for shape in ((2, 5, 5, 3), (64, 26, 26, 32)):
        x = rng.standard_normal(shape).astype(np.float32)
        y = np.empty((shape[0], shape[1] // 2, shape[2] // 2, shape[3]), np.float32)
        am = np.empty(y.shape, np.int32)
        pool2d.maxpool2d_forward(y, am, x, pool_size=(2, 2), strides=(2, 2))
        pool2d.maxpool2d_backward(np.empty_like(x), y, am, pool_size=(2, 2), strides=(2, 2))
    z = rng.standard_normal((64, 10)).astype(np.float32)
    acc = np.zeros(1, np.float32)
    loss.softmax_sparse_ce_train(np.empty_like(z), np.empty_like(z), acc, acc.copy(), z,
                                 np.arange(64, dtype=np.int32) % 10, scale=1 / 64)
    w = rng.standard_normal(1000).astype(np.float32)
    optim.adam_update(w, w.copy(), np.zeros_like(w), np.zeros_like(w),
                      scalars=np.array([1e-3, 0.0], np.float32), one_minus_beta_1=0.1,
                      one_minus_beta_2=0.001, epsilon=1e-7, zero_grad=False,
                      grad=(optim.PLAIN, 0.0, None, None))
    print("COMPILED", sorted(n for n in names if n != "numba.impl_carray.<locals>.impl"))
""")


def test_reference_cnn_kernels_compile_one_part_each(tmp_path):
    """Bias+relu and bias+linear share a part (no 16-kind activation switch compiled),
    the max-pool allocates nothing and clamps with selects (no numba allocator or
    max/min overload compiles), the loss row is inlined, and Adam compiles its plain part
    only (carray's view constructors, a few ms each, are left out of the comparison)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NUMBA_NUM_THREADS": "2",
           **_ALONE}
    out = _child(_CNN_KERNELS_CHILD, env)
    expected = sorted(["kernels_numba._bias_relu_linear_part", "kernels_numba._maxpool_2x2_part",
                       "kernels_numba._rows_softmax_sparse_ce_train",
                       "kernels_numba._adam_part", "kernels_numba._drive"])
    assert f"COMPILED {expected}" in out, out[-2000:]


# -- a non-editable install into a read-only site-packages ------------------------------

_FIT_CHILD = textwrap.dedent("""
    import numpy as np
    from numba.core import event
    compiled = []
    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__module__)
        def on_end(self, ev):
            pass
    event.register("numba:compile", Count())
    import kerasish
    from kerasish import layers, models
    assert "site" in kerasish.__file__, kerasish.__file__
    kerasish.utils.set_random_seed(0)
    model = models.Sequential([layers.Dense(5, activation="relu", input_shape=(3,)),
                               layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    model.fit(rng.random((8, 3), dtype=np.float32), rng.random((8, 2), dtype=np.float32),
              batch_size=4, epochs=1, verbose=2)
    print("KERNEL_COMPILES", sum(m.startswith("kernels_numba") for m in compiled))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux permissions")
def test_read_only_install_caches_in_the_user_directory(tmp_path):
    """pip install (not editable) into a directory, make it read-only, fit twice: numba
    falls back to the user cache directory (XDG_CACHE_HOME/numba); the second start
    compiles no kernel, and only the first prints the compile message (once)."""
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                          "--no-build-isolation", "--no-compile", "-q", "--target", str(site),
                          ROOT], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    prefix = ()
    if os.geteuid() == 0:  # root writes through chmod: drop the capability that allows it
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a read-only install")
        prefix = ("setpriv", "--inh-caps=-all", "--bounding-set=-all")
    subprocess.run(["chmod", "-R", "a-w", str(site)], check=True)
    try:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(tmp_path / "user-cache"),
                   HOME=str(tmp_path))
        work = tmp_path / "work"
        work.mkdir()
        first = _child(_FIT_CHILD, env, cwd=str(work), prefix=prefix)
        second = _child(_FIT_CHILD, env, cwd=str(work), prefix=prefix)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(site)], check=True)
    message = "compiling kernels for this CPU; cached for next time"
    assert first.count(message) == 1, first
    assert int(first.split("KERNEL_COMPILES")[1].split()[0]) > 0, first
    assert message not in second, second
    assert "KERNEL_COMPILES 0" in second, second
    assert list((tmp_path / "user-cache" / "numba").rglob("*.nbi")), "no user cache files"
    assert not list(site.rglob("*.nbi")), "cache files inside the read-only install"
