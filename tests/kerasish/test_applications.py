"""kerasish.applications beside real Keras 3 (torch backend): parameter counts, layer
names/classes and model names equal Keras's for every architecture; weight files cross
both ways (native .weights.h5, and the legacy layout Keras's ImageNet files use, passed
as `weights=path`); Keras's argument errors; the offline ImageNet download error; the
Keras features EfficientNet/MobileNetV2 use (broadcast Multiply, noise_shape Dropout,
per-channel Rescaling, ReLU6) against Keras; whole .keras/.h5 model files both ways; one
fit step. Small inputs keep it quick on CPU."""

import os
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

import kerasish  # noqa: E402
from kerasish import applications as A  # noqa: E402
from kerasish.applications import imagenet_utils  # noqa: E402
from kerasish.utils import file_utils  # noqa: E402

# name -> the smallest input Keras allows (Xception: 71), and per-model extras.
ARCHS = {
    "MobileNetV2": dict(alpha=0.35, input_shape=(32, 32, 3)),
    "ResNet50": dict(input_shape=(32, 32, 3)),
    "Xception": dict(input_shape=(71, 71, 3)),
    "VGG16": dict(input_shape=(32, 32, 3)),
    "EfficientNetB0": dict(input_shape=(32, 32, 3)),
}
TOPS = {"top": dict(include_top=True), "notop-avg": dict(include_top=False, pooling="avg")}


def _real():
    torch = pytest.importorskip("torch", reason="Keras comparisons need torch")  # noqa: F841
    keras = pytest.importorskip("keras", reason="Keras comparisons need Keras 3")
    if not keras.__version__.startswith("3."):
        pytest.skip(f"needs Keras 3; found {keras.__version__}")
    return keras


def _both(real, name, **kwargs):
    """The same architecture from a fresh naming session on each side."""
    real.utils.clear_session()
    kerasish.utils.clear_session()
    return (getattr(real.applications, name)(weights=None, **kwargs),
            getattr(A, name)(weights=None, **kwargs))


def _trainable_count(model):
    return sum(int(np.prod(w.shape)) for w in model.trainable_weights)


@pytest.mark.parametrize("top", sorted(TOPS))
@pytest.mark.parametrize("name", sorted(ARCHS))
def test_counts_and_layers_equal_keras(name, top):
    real = _real()
    theirs, ours = _both(real, name, **ARCHS[name], **TOPS[top])
    assert ours.count_params() == theirs.count_params()
    assert _trainable_count(ours) == _trainable_count(theirs)
    assert [la.name for la in ours.layers] == [la.name for la in theirs.layers]
    assert [type(la).__name__ for la in ours.layers] == \
        [type(la).__name__ for la in theirs.layers]
    assert ours.name == theirs.name
    assert ours.output_shape == tuple(theirs.output_shape)


def _randomized(real_model, seed=0):
    """Keras's weights nudged off their initial values (BN statistics included)."""
    rng = np.random.default_rng(seed)
    out = []
    for w, v in zip(real_model.get_weights(), real_model.weights):
        w = w + rng.normal(scale=0.05, size=w.shape).astype(np.float32)
        out.append(np.abs(w) + 0.5 if "variance" in v.path else w)
    real_model.set_weights(out)


CROSS = {  # MobileNetV2: ReLU6 and depthwise; EfficientNetB0: broadcasts, noise_shape.
    "MobileNetV2": dict(alpha=0.35, input_shape=(32, 32, 3), classes=5),
    "EfficientNetB0": dict(input_shape=(32, 32, 3), classes=4),
}


@pytest.mark.parametrize("name", sorted(CROSS))
def test_weights_cross_with_keras(name, tmp_path):
    real = _real()
    theirs, ours = _both(real, name, **CROSS[name])
    _randomized(theirs)
    scale = 255.0 if name.startswith("EfficientNet") else 1.0  # EfficientNet rescales
    x = np.random.default_rng(1).uniform(0, scale, (2, 32, 32, 3)).astype(np.float32)
    expected = theirs.predict(x, verbose=0)
    theirs.save_weights(tmp_path / "theirs.weights.h5")
    ours.load_weights(tmp_path / "theirs.weights.h5")
    got = ours.predict(x, verbose=0)
    assert np.abs(got - expected).max() <= 1e-5
    ours.save_weights(tmp_path / "ours.weights.h5")
    back = getattr(real.applications, name)(weights=None, **CROSS[name])
    back.load_weights(tmp_path / "ours.weights.h5")
    assert np.abs(back.predict(x, verbose=0) - got).max() <= 1e-5

    # The ImageNet files' layout (legacy HDF5, by layer order), given as weights=path.
    import h5py
    from keras.src.legacy.saving import legacy_h5_format

    legacy = tmp_path / "legacy_layout.h5"
    with h5py.File(legacy, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, theirs)
    kerasish.utils.clear_session()
    loaded = getattr(A, name)(weights=str(legacy), **CROSS[name])
    assert np.abs(loaded.predict(x, verbose=0) - expected).max() <= 1e-5


def test_whole_model_files_cross_with_keras(tmp_path):
    """A saved MobileNetV2 (ReLU(6.0) is kerasish.layers.ReLU): our .h5 and .keras files
    load in Keras with Keras's predictions; Keras's .keras loads here, no custom_objects."""
    real = _real()
    theirs, ours = _both(real, "MobileNetV2", **CROSS["MobileNetV2"])
    _randomized(theirs, seed=2)
    ours.set_weights(theirs.get_weights())
    x = np.random.default_rng(3).uniform(0, 1, (2, 32, 32, 3)).astype(np.float32)
    expected = theirs.predict(x, verbose=0)
    ours.save(tmp_path / "ours.h5")
    back = real.models.load_model(tmp_path / "ours.h5", compile=False)
    assert np.abs(back.predict(x, verbose=0) - expected).max() <= 1e-5
    ours.save(tmp_path / "ours.keras")
    back = real.models.load_model(tmp_path / "ours.keras", compile=False)
    assert [type(la).__module__.split(".")[0] for la in back.layers] == \
        ["keras"] * len(back.layers)
    assert np.abs(back.predict(x, verbose=0) - expected).max() <= 1e-5
    theirs.save(tmp_path / "theirs.keras")
    mine = kerasish.models.load_model(tmp_path / "theirs.keras", compile=False)
    assert A.CUSTOM_OBJECTS == {}
    assert [la.name for la in mine.layers] == [la.name for la in theirs.layers]
    assert np.abs(mine.predict(x, verbose=0) - expected).max() <= 1e-5


def _same_error(real, name, kwargs):
    """Keras raises ValueError on kwargs; ours raises one containing Keras's message."""
    with pytest.raises(ValueError) as theirs:
        getattr(real.applications, name)(**kwargs)
    kerasish.utils.clear_session()
    with pytest.raises(ValueError) as ours:
        getattr(A, name)(**kwargs)
    assert str(theirs.value) in str(ours.value), (str(theirs.value), str(ours.value))


BAD = [
    ("ResNet50", dict(weights="imagenet", classes=10)),
    ("VGG16", dict(weights="imagenet", classes=10)),
    ("Xception", dict(weights="imagenet", include_top=True, classes=7)),
    ("MobileNetV2", dict(weights=None, input_shape=(16, 16, 3))),
    ("Xception", dict(weights=None, include_top=False, input_shape=(64, 64, 3))),
    ("VGG16", dict(weights=None, include_top=True, input_shape=(None, None, 3))),
    ("ResNet50", dict(weights=None, input_shape=(32, 32))),
    ("ResNet50", dict(weights="imagenet", input_shape=(64, 64, 3))),
    ("VGG16", dict(weights="imagenet", include_top=False, input_shape=(64, 64, 1))),
    ("MobileNetV2", dict(weights="imagenet", alpha=0.6, include_top=False,
                         input_shape=(96, 96, 3))),
]


@pytest.mark.parametrize("name,kwargs", BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_arguments_raise_keras_errors(name, kwargs):
    _same_error(_real(), name, kwargs)


def test_bad_weights_pooling_and_activation(tmp_path):
    with pytest.raises(ValueError, match="The `weights` argument should be either"):
        A.ResNet50(weights=str(tmp_path / "missing.h5"))
    # Keras drops an unknown pooling silently; kerasish names it.
    with pytest.raises(ValueError, match=r"pooling to be one of None, 'avg' or 'max'.*"
                                         r"pooling='average'"):
        A.MobileNetV2(weights=None, include_top=False, pooling="average")
    with pytest.raises(ValueError, match="Only `None` and `softmax` activations"):
        A.MobileNetV2(weights="imagenet", alpha=0.35, classifier_activation="relu")


def _offline(monkeypatch, tmp_path):
    """No network: name resolution fails, as on a machine without internet."""
    def refuse(*args, **kwargs):
        raise urllib.error.URLError(socket.gaierror(-3, "Temporary failure in name "
                                                        "resolution"))

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(file_utils, "_default_cache_dir", lambda: str(tmp_path))


def test_imagenet_offline_says_how_to_pass_a_local_file(monkeypatch, tmp_path):
    _offline(monkeypatch, tmp_path)
    with pytest.raises(OSError) as err:
        A.MobileNetV2(weights="imagenet", alpha=0.35, include_top=False,
                      input_shape=(96, 96, 3))
    msg = str(err.value)
    fname = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5"
    assert "could not download" in msg and fname in msg
    assert "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/" in msg
    assert f"weights='/path/to/{fname}'" in msg
    assert not list((tmp_path / "models").iterdir())  # nothing half-written in the cache
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", None)
    with pytest.raises(OSError, match="could not download the ImageNet class index"):
        A.resnet.decode_predictions(np.zeros((1, 1000), np.float32))
    with pytest.raises(ValueError, match=r"expects a batch of predictions.*\(2, 10\)"):
        A.vgg16.decode_predictions(np.zeros((2, 10), np.float32))


def test_preprocess_input_equals_keras():
    real = _real()
    x = np.random.default_rng(2).uniform(0, 255, (2, 3, 4, 3)).astype(np.float32)
    for mod in ("resnet", "vgg16", "mobilenet_v2", "xception", "efficientnet"):
        want = getattr(real.applications, mod).preprocess_input(x.copy())
        got = getattr(A, mod).preprocess_input(x.copy())
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-4)
    ints = np.arange(24, dtype=np.uint8).reshape(2, 2, 2, 3)
    np.testing.assert_allclose(A.imagenet_utils.preprocess_input(ints, mode="torch"),
                               real.applications.imagenet_utils.preprocess_input(
                                   ints.copy(), mode="torch"), rtol=1e-6)
    with pytest.raises(ValueError, match="Expected mode to be one of"):
        A.imagenet_utils.preprocess_input(x, mode="pytorch")


def test_application_layers_train_like_keras():
    """Broadcast Multiply (both gradients), per-channel Rescaling and ReLU(6): one SGD
    step on the same weights gives Keras's weights and predictions."""
    real = _real()

    def build(L, multiply, rescaling, relu):
        inp = L.Input((4, 5, 3))
        a = L.Conv2D(3, 1)(rescaling([0.5, 2.0, 1.5])(inp))
        se = L.Reshape((1, 1, 3))(L.GlobalAveragePooling2D()(a))
        se = L.Conv2D(3, 1, activation="sigmoid")(se)
        out = L.Dense(2)(L.Flatten()(relu(6.0)(multiply()([a, se]))))
        return inp, out

    real.utils.set_random_seed(0)
    theirs = real.Model(*build(real.layers, real.layers.Multiply, real.layers.Rescaling,
                               real.layers.ReLU))
    ours = kerasish.Model(*build(kerasish.layers, kerasish.layers.Multiply,
                                 kerasish.layers.Rescaling, kerasish.layers.ReLU))
    ours.set_weights(theirs.get_weights())
    rng = np.random.default_rng(3)
    x = rng.normal(scale=3.0, size=(6, 4, 5, 3)).astype(np.float32)  # some values pass 6
    y = rng.normal(size=(6, 2)).astype(np.float32)
    for model, opt in ((theirs, real.optimizers.SGD(0.1)),
                       (ours, kerasish.optimizers.SGD(0.1))):
        model.compile(opt, "mean_squared_error")
        model.train_on_batch(x, y)
    for a, b in zip(theirs.get_weights(), ours.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)


def _run_dropout(layer, x, training, dy=None):
    """forward (and backward) of a built layer on host arrays (the CPU twins)."""
    layer._build_once((None, *x.shape[1:]))
    layer.scratch = {k: np.empty(s, d) for k, (s, d) in layer.scratch_shapes(len(x)).items()}
    y = np.empty_like(x)
    layer.forward(y, x, training)
    if dy is None:
        return y, None
    dx = np.empty_like(x)
    layer.backward(dx, dy.copy(), x, y)
    return y, dx


_Dropout = kerasish.layers.Dropout


def test_noise_shape_dropout_drops_whole_samples():
    x = np.random.default_rng(4).normal(size=(64, 3, 2, 5)).astype(np.float32)
    dy = np.random.default_rng(5).normal(size=x.shape).astype(np.float32)
    layer = _Dropout(0.5, noise_shape=(None, 1, 1, 1), seed=7)
    y, dx = _run_dropout(layer, x, True, dy)
    kept = np.array([np.array_equal(y[i], x[i] * 2.0) for i in range(len(x))])
    dropped = np.array([not y[i].any() for i in range(len(x))])
    assert np.all(kept ^ dropped) and 16 < kept.sum() < 48  # one draw per sample
    np.testing.assert_array_equal(dx, dy * np.where(kept, 2.0, 0.0)[:, None, None, None])
    again, _ = _run_dropout(_Dropout(0.5, noise_shape=(None, 1, 1, 1), seed=7), x, True)
    np.testing.assert_array_equal(again, y)  # same seed, same mask
    same, _ = _run_dropout(_Dropout(0.5, noise_shape=(None, 1, 1, 1)), x, False)
    np.testing.assert_array_equal(same, x)  # identity at inference
    assert layer.get_config()["noise_shape"] == (None, 1, 1, 1)  # a tuple, as Keras 3
    with pytest.raises(ValueError, match="does not broadcast"):
        _run_dropout(_Dropout(0.5, noise_shape=(None, 2, 1, 1)), x, True)


def test_one_fit_step():
    kerasish.utils.set_random_seed(0)
    model = A.MobileNetV2(alpha=0.35, input_shape=(32, 32, 3), weights=None, classes=3)
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    before = [w.copy() for w in model.get_weights()]
    x = np.random.default_rng(6).uniform(-1, 1, (4, 32, 32, 3)).astype(np.float32)
    history = model.fit(x, np.array([0, 1, 2, 1]), epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    changed = [not np.array_equal(a, b) for a, b in zip(before, model.get_weights())]
    assert sum(changed) > len(changed) // 2
    assert model.predict(x[:2], verbose=0).shape == (2, 3)


def test_transfer_learning_with_a_frozen_base():
    """keras-io's transfer-learning flow: a frozen base called with training=False
    inside a new model; fit moves only the new head."""
    kerasish.utils.set_random_seed(1)
    base = A.MobileNetV2(alpha=0.35, input_shape=(32, 32, 3), include_top=False, weights=None)
    base.trainable = False
    inputs = kerasish.Input((32, 32, 3))
    x = kerasish.layers.Rescaling(1 / 127.5, offset=-1)(inputs)
    x = kerasish.layers.GlobalAveragePooling2D()(base(x, training=False))
    model = kerasish.Model(inputs, kerasish.layers.Dense(1)(_Dropout(0.2)(x)))
    model.compile("adam", kerasish.losses.BinaryCrossentropy(from_logits=True))
    assert len(model.trainable_weights) == 2
    frozen = [w.copy() for w in base.get_weights()]
    head = [w.copy() for w in model.layers[-1].get_weights()]
    xs = np.random.default_rng(7).uniform(0, 255, (4, 32, 32, 3)).astype(np.float32)
    model.fit(xs, np.array([0, 1, 0, 1]), epochs=1, batch_size=4, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(frozen, base.get_weights()))
    assert not all(np.array_equal(a, b) for a, b in zip(head, model.layers[-1].get_weights()))
