"""augment_geometric ops (flip, affine sampler, crop and their parameter draws): forward
against float64 NumPy, backward against finite differences, CPU == CUDA for one seed."""

import numpy as np
import pytest

from kernels_numba.ops import augment_geometric as ag
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def _fix(i, size, fill):
    if fill == "reflect":  # (d c b a | a b c d | d c b a)
        period = np.mod(i, 2 * size)
        return np.where(period < size, period, 2 * size - 1 - period)
    if fill == "wrap":
        return np.mod(i, size)
    return np.clip(i, 0, size - 1)


def ref_affine(x, m, ho, wo, interpolation, fill, fill_value):
    """Keras 3's affine_transform (map_coordinates) in float64, written independently."""
    x, m = x.astype(np.float64), m.astype(np.float64)
    n, h, w, c = x.shape
    ii, jj = np.meshgrid(np.arange(ho), np.arange(wo), indexing="ij")
    out = np.zeros((n, ho, wo, c))
    for b in range(n):
        sx = m[b, 0] * jj + m[b, 1] * ii + m[b, 2]
        sy = m[b, 3] * jj + m[b, 4] * ii + m[b, 5]
        if interpolation == "bilinear":
            y0, x0 = np.floor(sy).astype(int), np.floor(sx).astype(int)
            corners = [(y0 + a, x0 + e, (sy - y0 if a else 1 - (sy - y0)) *
                        (sx - x0 if e else 1 - (sx - x0))) for a in (0, 1) for e in (0, 1)]
        else:
            rnd = np.round if interpolation == "nearest" else lambda v: np.floor(v + 0.5)
            corners = [(rnd(sy).astype(int), rnd(sx).astype(int), np.ones_like(sx))]
        for iy, ix, wgt in corners:
            v = x[b, _fix(iy, h, fill), _fix(ix, w, fill)]
            if fill == "constant":
                ok = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
                v = np.where(ok[..., None], v, fill_value)
            out[b] += wgt[..., None] * v
    return out


def _matrices(n, seed):
    r = np.random.default_rng(seed)
    ang = r.uniform(-1.0, 1.0, n)
    z = r.uniform(0.6, 1.5, (n, 2))
    t = r.uniform(-2.0, 2.0, (n, 2))
    m = np.stack([z[:, 0] * np.cos(ang), -z[:, 0] * np.sin(ang), 1.3 + t[:, 0],
                  z[:, 1] * np.sin(ang), z[:, 1] * np.cos(ang), 0.7 + t[:, 1]], axis=1)
    return m.astype(np.float32)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest", "nearest_exact"])
@pytest.mark.parametrize("fill", ["reflect", "wrap", "constant", "nearest"])
def test_affine_forward(device, interpolation, fill):
    x = randn((2, 5, 4, 3), seed=1)
    m = _matrices(2, seed=2)
    y = on(device, np.full((2, 3, 6, 3), 9, np.float32))
    ag.affine_transform_forward(y, on(device, x), on(device, m), interpolation=interpolation,
                                fill_mode=fill, fill_value=0.5)
    assert_close(host(y), ref_affine(x, m, 3, 6, interpolation, fill, 0.5), atol=2e-5,
                 what=f"affine {interpolation} {fill}")


@pytest.mark.parametrize("interpolation,fill", [("bilinear", "reflect"), ("bilinear", "constant"),
                                                ("bilinear", "wrap"), ("nearest", "constant"),
                                                ("nearest_exact", "nearest")])
def test_affine_backward(device, interpolation, fill):
    x = randn((1, 4, 3, 2), seed=3)
    m = _matrices(1, seed=4)
    g = randn((1, 5, 3, 2), seed=5)
    dx = on(device, np.full(x.shape, 7, np.float32))
    ag.affine_transform_backward(dx, on(device, g), on(device, m), interpolation=interpolation,
                                 fill_mode=fill, fill_value=0.3)
    ref = lambda u: np.sum(ref_affine(u, m, 5, 3, interpolation, fill, 0.3) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-4, atol=1e-4, what="affine dx")


@pytest.mark.parametrize("out", [(3, 5), (7, 9)])
def test_resize_matrices_are_half_pixel_resizes(device, out):
    """PyTorch's bilinear resize (align_corners=False), written out."""
    x = randn((1, 4, 6, 2), seed=6)
    (ho, wo), (h, w) = out, (4, 6)
    m = ag.resize_matrices(1, out, (h, w))
    y = on(device, np.zeros((1, ho, wo, 2), np.float32))
    ag.affine_transform_forward(y, on(device, x), on(device, m), fill_mode="nearest")
    rows = np.clip((np.arange(ho) + 0.5) * h / ho - 0.5, 0, None)
    cols = np.clip((np.arange(wo) + 0.5) * w / wo - 0.5, 0, None)
    want = np.zeros((ho, wo, 2))
    for i, r in enumerate(rows):
        for j, q in enumerate(cols):
            r0, q0 = int(r), int(q)
            r1, q1 = min(r0 + 1, h - 1), min(q0 + 1, w - 1)
            a, e = r - r0, q - q0
            want[i, j] = ((1 - a) * ((1 - e) * x[0, r0, q0] + e * x[0, r0, q1]) +
                          a * ((1 - e) * x[0, r1, q0] + e * x[0, r1, q1]))
    assert_close(host(y)[0], want, what="resize")


def test_random_affine_params_build_keras_matrices(device):
    m = on(device, np.zeros((3, 6), np.float32))
    ag.random_affine_params(m, seed=5, step=2, height=5, width=7, rotation=(-0.4, 0.4))
    got = host(m)
    cx, cy = 3.0, 2.0
    ang = np.arctan2(got[:, 3], got[:, 0])
    assert np.all(np.abs(ang) <= 0.4) and len(set(np.round(ang, 6))) == 3
    c, s = np.cos(ang), np.sin(ang)  # Keras's rotation matrix about ((W-1)/2, (H-1)/2)
    want = np.stack([c, -s, cx - cx * c + cy * s, s, c, cy - cx * s - cy * c], 1)
    assert_close(got, want, atol=1e-5, what="rotation matrices")
    ag.random_affine_params(m, seed=5, step=2, height=5, width=7, zoom_height=(-0.5, 0.5),
                            translate_width=(-0.2, 0.2))
    got = host(m)
    assert np.all((got[:, 0] >= 0.5) & (got[:, 0] <= 1.5)) and np.allclose(got[:, 0], got[:, 4])
    tx = cx - got[:, 0] * cx - got[:, 2]  # a2 = cx - tx - zx*cx
    assert np.all(np.abs(tx) <= 0.2 * 7 + 1e-5) and np.allclose(got[:, [1, 3]], 0)


def _cpu(fn, shape, dtype, **kw):
    a = np.zeros(shape, dtype)
    fn(a, **kw)
    return a


def test_params_identical_on_cpu_and_device(device):
    kw = dict(seed=11, step=3)
    for fn, shape, dtype, extra in [
            (ag.random_flip_params, (9,), np.float32, {}),
            (ag.random_crop_params, (7, 2), np.int32,
             dict(height=9, width=6, crop_height=4, crop_width=6)),
            (ag.random_affine_params, (5, 6), np.float32,
             dict(height=8, width=5, rotation=(-1, 1), zoom_height=(-0.3, 0.2),
                  zoom_width=(0.0, 0.4), translate_height=(-0.1, 0.3)))]:
        buf = on(device, np.zeros(shape, dtype))
        fn(buf, **kw, **extra)
        # the same float32 code on both devices; a GPU may contract a*b+c into one FMA
        tol = 2e-6 if fn is ag.random_affine_params else 0
        assert_close(host(buf), _cpu(fn, shape, dtype, **kw, **extra), rtol=tol, atol=tol,
                     what=fn.__name__)
    flips = _cpu(ag.random_flip_params, (400,), np.float32, **kw)
    assert 150 < flips.sum() < 250
    offs = _cpu(ag.random_crop_params, (400, 2), np.int32, seed=1, step=0, height=9, width=6,
                crop_height=4, crop_width=6)
    assert offs[:, 0].min() == 0 and offs[:, 0].max() == 5 and not offs[:, 1].any()


@pytest.mark.parametrize("horizontal,vertical", [(True, False), (False, True), (True, True)])
def test_flip(device, horizontal, vertical):
    x = randn((3, 3, 4, 2), seed=7)
    x[0, 0, 0, 0] = np.nan
    flips = np.array([1, 0, 1], np.float32)
    want = x.copy()
    for b in (0, 2):
        if horizontal:
            want[b] = want[b, :, ::-1]
        if vertical:
            want[b] = want[b, ::-1]
    y = on(device, np.zeros_like(x))
    ag.flip_images(y, on(device, x), on(device, flips), horizontal=horizontal,
                   vertical=vertical)
    np.testing.assert_array_equal(host(y), want)
    back = on(device, np.zeros_like(x))  # the flip is its own transpose
    ag.flip_images(back, y, on(device, flips), horizontal=horizontal, vertical=vertical)
    np.testing.assert_array_equal(host(back), x)
    g = randn(x.shape, seed=8)
    dx = on(device, np.zeros_like(x))
    ag.flip_images(dx, on(device, g), on(device, flips), horizontal=horizontal,
                   vertical=vertical)

    def ref(u):
        u = u.copy()
        for b in (0, 2):
            u[b] = u[b, ::-1 if vertical else 1, ::-1 if horizontal else 1]
        return np.sum(u * g)

    assert_close(host(dx), numeric_grad(ref, np.nan_to_num(x)), rtol=1e-5, what="flip dx")


def test_crop(device):
    x = randn((2, 5, 4, 3), seed=8)
    offs = np.array([[2, 1], [0, 0]], np.int32)
    y = on(device, np.zeros((2, 3, 3, 3), np.float32))
    ag.crop_images_forward(y, on(device, x), on(device, offs))
    want = np.stack([x[0, 2:5, 1:4], x[1, 0:3, 0:3]])
    np.testing.assert_array_equal(host(y), want)
    g = randn((2, 3, 3, 3), seed=9)
    dx = on(device, np.full(x.shape, 4, np.float32))
    ag.crop_images_backward(dx, on(device, g), on(device, offs))
    ref = lambda u: np.sum(np.stack([u[0, 2:5, 1:4], u[1, 0:3, 0:3]]) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(ref, x), rtol=1e-5, what="crop dx")


def test_errors_name_the_op():
    x = np.zeros((1, 3, 3, 1), np.float32)
    m = np.zeros((1, 6), np.float32)
    with pytest.raises(ValueError, match=r"affine_transform_forward: expected fill_mode in"):
        ag.affine_transform_forward(x.copy(), x, m, fill_mode="mirror")
    with pytest.raises(ValueError, match=r"affine_transform_forward: expected m.shape == "
                                         r"\(1, 6\)"):
        ag.affine_transform_forward(x.copy(), x, np.zeros((2, 6), np.float32))
    with pytest.raises(ValueError, match="random_crop_params: expected the crop"):
        ag.random_crop_params(np.zeros((1, 2), np.int32), seed=0, step=0, height=3, width=3,
                              crop_height=4, crop_width=1)
    with pytest.raises(ValueError, match="random_affine_params: expected rotation with low"):
        ag.random_affine_params(m, seed=0, step=0, height=3, width=3, rotation=(1, -1))
    with pytest.raises(TypeError, match="random_flip_params: expected seed to be an integer"):
        ag.random_flip_params(np.zeros(1, np.float32), seed=1.5, step=0)
