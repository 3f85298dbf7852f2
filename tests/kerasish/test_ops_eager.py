"""kerasish.ops on arrays (eager, the CPU twins): results vs float64 NumPy, vs real
Keras 3 `keras.ops` (torch backend) for a sample of ops, error messages, and the
symbolic side: functions on KerasTensors return KerasTensors with the right shapes,
and install_operators gives tensors +, -, *, /, @, [], comparisons and .T."""

import os

import numpy as np
import pytest

from kerasish import ops
from kerasish.graph.nodes import KerasTensor
from kernels_numba.testing import assert_close, randn

os.environ.setdefault("KERAS_BACKEND", "torch")

X = randn((3, 5), seed=1)
P = np.abs(randn((3, 5), seed=2)) + 0.1
Y = randn((5,), seed=3)
LABELS = np.array([1, 0, 4], np.float32)

# (name, kerasish call, the same call on keras.ops), each on the arrays above.
CASES = [
    ("add", lambda o: o.add(X, Y)), ("subtract", lambda o: o.subtract(X, 2.0)),
    ("multiply", lambda o: o.multiply(X, Y)), ("divide", lambda o: o.divide(X, P)),
    ("power", lambda o: o.power(P, 1.5)), ("square", lambda o: o.square(X)),
    ("sqrt", lambda o: o.sqrt(P)), ("exp", lambda o: o.exp(X)), ("log", lambda o: o.log(P)),
    ("log1p", lambda o: o.log1p(P)), ("abs", lambda o: o.abs(X)),
    ("sign", lambda o: o.sign(X)), ("negative", lambda o: o.negative(X)),
    ("maximum", lambda o: o.maximum(X, 0.1)), ("minimum", lambda o: o.minimum(X, Y)),
    ("clip", lambda o: o.clip(X, -0.5, 0.5)),
    ("where", lambda o: o.where(o.greater(X, 0.0), X, Y)),
    ("less_equal", lambda o: o.less_equal(X, Y)), ("not_equal", lambda o: o.not_equal(X, X)),
    ("matmul", lambda o: o.matmul(X, o.transpose(X))),
    ("matmul_batched", lambda o: o.matmul(o.reshape(o.concatenate([X, X], 0), (2, 3, 5)),
                                          o.expand_dims(o.transpose(X), 0))),
    ("dot", lambda o: o.dot(X, Y)),
    ("sum", lambda o: o.sum(X, axis=1)), ("mean", lambda o: o.mean(X, axis=-1, keepdims=True)),
    ("max", lambda o: o.max(X, axis=0)), ("min", lambda o: o.min(X)),
    ("var", lambda o: o.var(X, axis=0)), ("std", lambda o: o.std(X)),
    ("argmax", lambda o: o.argmax(X, axis=1)), ("argmin", lambda o: o.argmin(X)),
    ("logsumexp", lambda o: o.logsumexp(X, axis=(0, 1))),
    ("reshape", lambda o: o.reshape(X, (5, -1))), ("transpose", lambda o: o.transpose(X)),
    ("expand_dims", lambda o: o.expand_dims(X, 1)),
    ("squeeze", lambda o: o.squeeze(o.expand_dims(X, -1))),
    ("concatenate", lambda o: o.concatenate([X, X * 2], axis=-1)),
    ("stack", lambda o: o.stack([X, X], axis=1)),
    ("split", lambda o: o.split(X, [2, 3], axis=1)),
    ("take", lambda o: o.take(X, np.array([2, 0]), axis=1)),
    ("relu", lambda o: o.relu(X)), ("sigmoid", lambda o: o.sigmoid(X)),
    ("tanh", lambda o: o.tanh(X)), ("softmax", lambda o: o.softmax(X)),
    ("softmax_axis0", lambda o: o.softmax(X, axis=0)),
    ("log_softmax", lambda o: o.log_softmax(X)), ("gelu", lambda o: o.gelu(X)),
    ("gelu_exact", lambda o: o.gelu(X, approximate=False)), ("silu", lambda o: o.silu(X)),
    ("softplus", lambda o: o.softplus(X)), ("elu", lambda o: o.elu(X)),
    ("leaky_relu", lambda o: o.leaky_relu(X)),
    ("one_hot", lambda o: o.one_hot(np.array([0, 2, 4]), 5)),
    ("moments", lambda o: o.moments(X, axes=[0])),
    ("categorical_crossentropy", lambda o: o.categorical_crossentropy(
        o.one_hot(np.array([0, 2, 4]), 5), o.softmax(X))),
    ("categorical_crossentropy_logits", lambda o: o.categorical_crossentropy(
        o.one_hot(np.array([0, 2, 4]), 5), X, from_logits=True)),
    ("sparse_categorical_crossentropy", lambda o: o.sparse_categorical_crossentropy(
        np.array([1, 0, 4]), o.softmax(X))),
    ("sparse_categorical_crossentropy_logits", lambda o: o.sparse_categorical_crossentropy(
        np.array([1, 0, 4]), X, from_logits=True)),
    ("binary_crossentropy", lambda o: o.binary_crossentropy(P / P.max(), o.sigmoid(X))),
    ("binary_crossentropy_logits", lambda o: o.binary_crossentropy(P / P.max(), X,
                                                                    from_logits=True)),
    ("cast_int", lambda o: o.cast(X * 3, "int32")),
    ("stop_gradient", lambda o: o.stop_gradient(o.convert_to_tensor(X))),
    ("zeros_like", lambda o: o.zeros_like(X)), ("full", lambda o: o.full((2, 3), 1.5)),
    ("arange", lambda o: o.arange(1, 7, 2)),
]


def _np(v):
    if isinstance(v, (list, tuple)):
        return [_np(a) for a in v]
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    return np.asarray(v, np.float64)


@pytest.fixture(scope="module")
def keras_ops():
    keras = pytest.importorskip("keras", reason="needs Keras 3 (the `test` extra)")
    return keras.ops


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_eager_matches_real_keras(keras_ops, name, call):
    got, want = _np(call(ops)), _np(call(keras_ops))
    for g, w in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        assert_close(g, w, rtol=2e-5, atol=2e-6, what=name)


def test_eager_returns_float32_numpy():
    out = ops.add(X, 1)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert ops.sum(X).shape == ()
    np.testing.assert_allclose(ops.mean(X, axis=0), X.astype(np.float64).mean(0), rtol=1e-6)


def test_nan_propagates_eagerly():
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    assert np.isnan(ops.sum(x, axis=1))[0] and not np.isnan(ops.sum(x, axis=1))[1]
    assert np.isnan(ops.relu(x))[0, 1] and np.isnan(ops.softmax(x))[0].all()
    assert np.isnan(ops.maximum(x, 0.0))[0, 1] and np.isnan(ops.sqrt(-x))[1].all()


def test_errors_name_op_argument_and_shapes():
    with pytest.raises(ValueError, match=r"ops\.add: incompatible shapes for broadcasting: "
                                         r"\(3, 5\) and \(4,\)"):
        ops.add(X, np.ones(4))
    with pytest.raises(ValueError, match=r"ops\.matmul: the last axis of x1 \(3, 5\)"):
        ops.matmul(X, X)
    with pytest.raises(ValueError, match=r"ops\.reshape: cannot reshape \(3, 5\)"):
        ops.reshape(X, (4, -1))
    with pytest.raises(ValueError, match=r"ops\.cast: .*received dtype='float16'"):
        ops.cast(X, "float16")
    with pytest.raises(ValueError, match=r"ops\.sum: expected axis in \[-2, 2\)"):
        ops.sum(X, axis=2)
    with pytest.raises(ValueError, match=r"ops\.zeros: expected a concrete shape"):
        ops.zeros((None, 3))


def test_symbolic_shapes_and_operators():
    from kerasish.layers.input_layer import Input
    from kerasish.ops.operators import install_operators

    install_operators(KerasTensor)  # the lead installs it in graph/nodes.py
    x = Input(shape=(4, 6))
    w = np.ones((6, 3), np.float32)
    h = ops.relu(ops.matmul(x, w) + np.zeros(3, np.float32))
    assert isinstance(h, KerasTensor) and h.shape == (None, 4, 3)
    assert ops.mean(h, axis=-1, keepdims=True).shape == (None, 4, 1)
    assert ops.sum(h, axis=0).shape == (4, 3)  # the batch reduced: fixed size
    assert (x * 2 - 1).shape == (None, 4, 6) and (1 / x).shape == (None, 4, 6)
    assert (x @ w).shape == (None, 4, 3) and (-x).shape == (None, 4, 6)
    assert x[:, 1:3, ::2].shape == (None, 2, 3) and x[..., None, 0].shape == (None, 4, 1)
    assert x[0].shape == (4, 6) and (x > 0).shape == (None, 4, 6)
    assert ops.transpose(x, (0, 2, 1)).shape == (None, 6, 4) and x[0].T.shape == (6, 4)
    assert ops.reshape(x, (-1, 24)).shape == (None, 24)
    assert [t.shape for t in ops.split(x, 2, axis=-1)] == [(None, 4, 3)] * 2
    assert ops.argmax(x, axis=-1).shape == (None, 4)
    eq = x == x
    assert isinstance(eq, KerasTensor) and bool(eq) and not bool(x == h)
    assert x in [h, x] and [h, x].index(x) == 1  # identity idioms still work
    with pytest.raises(ValueError, match="batch"):
        ops.transpose(x, (1, 0, 2))
    with pytest.raises(ValueError, match="batch"):
        ops.add(x, np.ones((5, 4, 6)))
