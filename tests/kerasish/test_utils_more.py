"""keras.utils.split_dataset, normalize, to_categorical and pad_sequences against real
Keras 3 (torch backend) where it is installed, and their edge cases."""

import os
import random

import numpy as np
import pytest

import kerasish as keras

os.environ.setdefault("KERAS_BACKEND", "torch")


@pytest.fixture(scope="module")
def real():
    pytest.importorskip("torch", reason="Keras comparisons need torch (pip install torch)")
    return pytest.importorskip("keras", reason="Keras comparisons need Keras 3")


SIZES = [(0.8, None), (None, 0.25), (3, None), (None, 4), (0.3, 0.3), (2, 5), (0.5, 5),
         (0.05, None), (0.95, None), (0, 0.5), (10, None), (None, 10), (0.7, 0.4),
         (6, 6), (True, None), ("3", None), (-1, None), (1.0, None), (0.04, None)]


@pytest.mark.parametrize("left, right", SIZES)
def test_split_sizes_match_keras(real, left, right):
    from keras.src.utils.dataset_utils import _rescale_dataset_split_sizes

    n = 10
    x, y = np.arange(n * 2).reshape(n, 2), np.arange(n)
    try:
        want = _rescale_dataset_split_sizes(left, right, n)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)):
            keras.utils.split_dataset((x, y), left_size=left, right_size=right)
        return
    (xl, yl), (xr, yr) = keras.utils.split_dataset((x, y), left_size=left, right_size=right)
    assert (len(yl), len(yr)) == want
    np.testing.assert_array_equal(yl, np.arange(want[0]))  # Keras: the first samples,
    np.testing.assert_array_equal(yr, np.arange(n - want[1], n))  # and the last ones
    np.testing.assert_array_equal(xl, x[:want[0]])


def test_split_structures_shuffle_and_errors():
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    left, right = keras.utils.split_dataset(x, left_size=0.6)
    assert isinstance(left, np.ndarray) and left.shape == (6, 3) and right.shape == (4, 3)
    data = [x, {"ids": list(range(10)), "w": np.ones(10)}]
    left, right = keras.utils.split_dataset(data, right_size=3, shuffle=True, seed=11)
    order = list(range(10))
    random.Random(11).shuffle(order)  # the permutation Keras's tf.data path draws
    assert isinstance(left, list) and isinstance(left[1], dict)
    np.testing.assert_array_equal(left[1]["ids"], order[:7])
    np.testing.assert_array_equal(right[0], x[order[7:]])
    again, _ = keras.utils.split_dataset(data, right_size=3, shuffle=True, seed=11)
    np.testing.assert_array_equal(again[0], left[0])
    keras.utils.set_random_seed(2)
    a, _ = keras.utils.split_dataset(x, left_size=5, shuffle=True)
    keras.utils.set_random_seed(2)
    b, _ = keras.utils.split_dataset(x, left_size=5, shuffle=True)
    np.testing.assert_array_equal(a, b)  # seed None follows set_random_seed
    (xl, yl), _ = keras.utils.split_dataset((x, np.arange(10)), left_size=0.5)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    assert len(model.fit(xl, yl.astype(np.float32), verbose=0).history["loss"]) == 1
    with pytest.raises(ValueError, match="same number of samples"):
        keras.utils.split_dataset((x, np.arange(9)), left_size=0.5)
    with pytest.raises(ValueError, match="at least one of left_size and right_size"):
        keras.utils.split_dataset(x)
    with pytest.raises(TypeError, match="NumPy array or a tuple/list"):
        keras.utils.split_dataset(iter([x]), left_size=0.5)
    with pytest.raises(ValueError, match="preferred_backend"):
        keras.utils.split_dataset(x, left_size=0.5, preferred_backend="torch")
    with pytest.raises(ValueError, match="no sample axis"):
        keras.utils.split_dataset((x, np.float32(1)), left_size=0.5)


CASES = [(np.array([[3.0, 4.0], [0.0, 0.0], [1.0, -2.0]]), -1, 2),
         (np.array([3.0, 4.0]), -1, 2), (np.array([3, 4, 12]), 0, 2),
         (np.random.default_rng(1).normal(size=(2, 3, 5)).astype(np.float32), -1, 1),
         (np.random.default_rng(2).normal(size=(4, 3)), 1, np.inf),
         (np.array([[1.0, np.nan], [np.inf, 1.0], [-np.inf, 0.0]]), -1, 2)]


@pytest.mark.parametrize("x, axis, order", CASES)
def test_normalize_matches_keras(real, x, axis, order):
    with np.errstate(invalid="ignore"):  # the Inf case divides Inf by Inf (NaN)
        want = real.utils.normalize(x, axis=axis, order=order)
        got = keras.utils.normalize(x, axis=axis, order=order)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_normalize_other_axes_and_errors():
    x = np.random.default_rng(3).normal(size=(3, 4, 2))
    for axis in (0, 1, -2):  # Keras 3.15 fails to broadcast these; float64 reference
        norms = np.sqrt((x * x).sum(axis=axis, keepdims=True))
        np.testing.assert_allclose(keras.utils.normalize(x, axis=axis), x / norms,
                                   rtol=1e-14)
    np.testing.assert_array_equal(keras.utils.normalize([[3, 4]]), [[0.6, 0.8]])
    with pytest.raises(ValueError, match=r"axis an int in \[-3, 3\).*received 3"):
        keras.utils.normalize(x, axis=3)
    with pytest.raises(ValueError, match="axis an int"):
        keras.utils.normalize(x, axis=None)
    with pytest.raises(ValueError, match="0-d"):
        keras.utils.normalize(np.float64(2.0))
    with pytest.raises(ValueError, match="order='fro' is not a vector norm order"):
        keras.utils.normalize(x, order="fro")


CATEGORICAL = [([0, 2, 1], None), (np.array([[0], [2]]), 3), (2, 4), (np.array([1.0, 0.0]), 3),
               (np.array([[0, 1], [2, 1]]), None), (np.array([[[1]], [[0]]]), 2), ([], 3)]


@pytest.mark.parametrize("x, num_classes", CATEGORICAL)
def test_to_categorical_matches_keras(real, x, num_classes):
    want = real.utils.to_categorical(x, num_classes)
    got = keras.utils.to_categorical(x, num_classes)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_to_categorical_refuses_out_of_range_ids():
    with pytest.raises(ValueError, match=r"class ids must be in \[0, 3\).*\[-1, 2\]"):
        keras.utils.to_categorical([0, -1, 2], 3)  # Keras silently wraps -1
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        keras.utils.to_categorical([0, 2], 2)


PADS = [dict(), dict(maxlen=2), dict(padding="post", truncating="post", maxlen=3, value=-1),
        dict(dtype="float32", maxlen=5)]


@pytest.mark.parametrize("kwargs", PADS)
def test_pad_sequences_matches_keras(real, kwargs):
    seqs = [[1, 2, 3, 4], [5], [], [6, 7]]
    want = real.utils.pad_sequences(seqs, **kwargs)
    got = keras.utils.pad_sequences(seqs, **kwargs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
