"""Layers and models written with call() and keras.ops are traced into the plan: the
keras-io antirectifier, the subclassing guide's Linear / MLPBlock and a subclassed Model
train through fit; their backward (reverse-mode over the op nodes) matches finite
differences; weights save and load (issue 15)."""

import numpy as np
import pytest

import kernels_numba
import kerasish as keras
from kerasish import config, layers, ops
from kerasish.engine.executor import TRAIN


class Antirectifier(layers.Layer):  # keras-io's recipe, unchanged
    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        output_dim = input_shape[-1]
        self.kernel = self.add_weight(
            shape=(output_dim * 2, output_dim),
            initializer=self.initializer,
            name="kernel",
            trainable=True,
        )

    def call(self, inputs):
        inputs -= ops.mean(inputs, axis=-1, keepdims=True)
        pos = ops.relu(inputs)
        neg = ops.relu(-inputs)
        concatenated = ops.concatenate([pos, neg], axis=-1)
        mixed = ops.matmul(concatenated, self.kernel)
        return mixed


class Linear(keras.layers.Layer):  # the subclassing guide's
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal",
                                 trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


class MLPBlock(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.linear_1 = Linear(8)
        self.linear_2 = Linear(8)
        self.linear_3 = Linear(1)

    def call(self, inputs):
        x = self.linear_1(inputs)
        x = keras.activations.tanh(x)
        x = self.linear_2(x)
        x = ops.sigmoid(x) * 2.0 - ops.square(x) / 4.0
        return self.linear_3(x)


class Classifier(keras.Model):  # a subclassed Model with layers in __init__
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.block = MLPBlock()
        self.dense = layers.Dense(3)

    def call(self, inputs, training=None):
        return ops.softmax(self.dense(inputs) + self.block(inputs))


def gradients(model, x, y):
    xs, ys = model._check_x(x, "test"), model._check_y(y, "test")
    for w in model.trainable_weights:
        kernels_numba.ops.fill(w.grad, 0.0)
    model._executor(len(xs[0]), TRAIN).train_step(xs, ys, apply=False)
    return [kernels_numba.to_host(w.grad).astype(np.float64) for w in model.trainable_weights]


def check_against_finite_differences(model, x, y, entries=6, eps=1e-2):
    analytic = gradients(model, x, y)
    for k, var in enumerate(model.trainable_weights):
        value = var.numpy().astype(np.float64)
        for i in list(np.ndindex(value.shape))[:entries]:
            losses = []
            for d in (eps, -eps):
                probe = value.copy()
                probe[i] += d
                var.assign(probe)
                result = model.evaluate(x, y, batch_size=len(x), verbose=0)
                losses.append(float(result[0] if isinstance(result, list) else result))
            var.assign(value)
            numeric = (losses[0] - losses[1]) / (2 * eps)
            assert abs(analytic[k][i] - numeric) <= 2e-3 + 3e-2 * abs(numeric), \
                (var.path, i, analytic[k][i], numeric)


def test_nested_call_layers_track_weights_and_run_eagerly():
    mlp = MLPBlock()
    y = mlp(ops.ones(shape=(3, 64)))
    assert y.shape == (3, 1)
    assert len(mlp.weights) == 6 and len(mlp.trainable_weights) == 6
    mlp.trainable = False
    assert mlp.trainable_weights == [] and not mlp.linear_1.trainable


def test_antirectifier_trains_and_matches_finite_differences():
    keras.utils.set_random_seed(0)
    # tanh before it: with a linear Dense some x - mean(x) sit within a probe step of
    # ReLU's kink, where central differences are wrong (not the gradient)
    model = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="tanh"),
                              Antirectifier(), layers.Dense(2)])
    model.compile("sgd", "mean_squared_error")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(7, 6)).astype(np.float32), rng.normal(size=(7, 2))
    check_against_finite_differences(model, x, y, eps=1e-3)  # small steps: ReLU kinks
    history = model.fit(x, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_subclassed_model_trains_saves_and_loads(tmp_path):
    keras.utils.set_random_seed(1)
    model = Classifier()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(9, 4)).astype(np.float32), rng.integers(0, 3, 9)
    model.fit(x, y, epochs=1, verbose=0)
    assert len(model.weights) == 8  # dense (2) + block (3 x 2)
    check_against_finite_differences(model, x, y, entries=4)
    model.save_weights(tmp_path / "c.weights.h5")
    other = Classifier()
    other(x[:1])
    other.load_weights(tmp_path / "c.weights.h5")
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.cudasim
def test_traced_layers_train_the_same_on_cuda():
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(5, 2))
    runs = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            keras.utils.set_random_seed(3)
            model = keras.Sequential([keras.Input((4,)), Antirectifier(), Linear(2)])
            model.compile("sgd", "mean_squared_error")
            if runs:
                model.set_weights(runs[0][0])
            start = model.get_weights()
            model.fit(x, y, epochs=2, batch_size=5, verbose=0)
            runs.append((start, model.get_weights()))
        finally:
            config.set_device("cpu")
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def custom_mean_squared_error(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class CustomMSE(keras.losses.Loss):  # the training guide's Loss subclass
    def __init__(self, regularization_factor=0.1, name="custom_mse"):
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true, y_pred):
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


class ActivityRegularizationLayer(keras.layers.Layer):  # the subclassing guide's
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


def small_model(extra=None):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    x = layers.Dense(6, activation="tanh")(inputs)
    if extra is not None:
        x = extra(x)
    return keras.Model(inputs, layers.Dense(3)(x))


def test_a_loss_function_equals_the_built_in_loss_bit_for_bit():
    rng = np.random.default_rng(4)
    x, y = rng.random((32, 4)).astype(np.float32), rng.random((32, 3)).astype(np.float32)
    runs = []
    for loss in (custom_mean_squared_error, "mean_squared_error"):
        model = small_model()
        model.compile("sgd", loss=loss)
        runs.append((model.fit(x, y, epochs=2, batch_size=8, shuffle=False,
                               verbose=0).history["loss"], model.get_weights()))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)


def test_loss_subclass_and_add_loss_gradients_match_finite_differences():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 3))
    model = small_model()
    model.compile("sgd", loss=CustomMSE())
    expected = np.mean(np.mean((model.predict(x, verbose=0) - y) ** 2, -1) +
                       0.1 * np.mean((0.5 - model.predict(x, verbose=0)) ** 2, -1))
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)
    check_against_finite_differences(model, x, y)
    model = small_model(ActivityRegularizationLayer(0.5))
    model.compile("sgd", "mean_squared_error")
    hidden = keras.Model(model.inputs, model.layers[1].output).predict(x, verbose=0)
    plain = np.mean((model.predict(x, verbose=0) - y) ** 2)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), plain + 0.5 * hidden.mean(),
                               rtol=1e-5)
    check_against_finite_differences(model, x, y)


class CategoricalTruePositives(keras.metrics.Metric):  # the training guide's, unchanged
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


def test_metric_subclass_accumulates_on_the_device():
    keras.utils.set_random_seed(6)
    inputs = keras.Input(shape=(12,), name="digits")
    x = layers.Dense(16, activation="relu")(inputs)
    outputs = layers.Dense(4, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(),
                  metrics=[CategoricalTruePositives()])
    rng = np.random.default_rng(6)
    x_, y_ = rng.random((50, 12)).astype(np.float32), rng.integers(0, 4, 50)
    history = model.fit(x_, y_, batch_size=16, epochs=2, verbose=0)
    assert "categorical_true_positives" in history.history
    matches = int((model.predict(x_, verbose=0).argmax(1) == y_).sum())
    logs = model.evaluate(x_, y_, batch_size=16, verbose=0, return_dict=True)
    assert logs["categorical_true_positives"] == matches  # summed over the 4 batches


class ComputeSum(keras.layers.Layer):  # the subclassing guide's, unchanged
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,),
                                     trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


def test_state_updates_in_call_run_every_call():
    x = ops.ones((2, 2))
    my_sum = ComputeSum(2)
    np.testing.assert_array_equal(my_sum(x).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(my_sum(x).numpy(), [4.0, 4.0])
    assert len(my_sum.weights) == 1 and len(my_sum.non_trainable_weights) == 1
    assert my_sum.trainable_weights == []


@pytest.mark.cudasim
@pytest.mark.slow  # model-level; test_traced_layers_train_the_same_on_cuda keeps the path
def test_custom_loss_and_metric_run_the_same_on_cuda():
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=(6, 4)).astype(np.float32), rng.integers(0, 3, 6)
    onehot = np.eye(3, dtype=np.float32)[y]
    runs = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            model = small_model()
            if runs:
                model.set_weights(runs[0][0])
            start = model.get_weights()
            model.compile("sgd", loss=CustomMSE(), metrics=[CategoricalTruePositives()])
            h = model.fit(x, onehot, epochs=2, batch_size=3, shuffle=False, verbose=0)
            runs.append((start, model.get_weights(), h.history))
        finally:
            config.set_device("cpu")
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[1][2]["loss"], runs[0][2]["loss"], rtol=1e-5)
    assert runs[1][2]["categorical_true_positives"] == \
        runs[0][2]["categorical_true_positives"]


@pytest.mark.cudasim
@pytest.mark.slow  # model-level; test_traced_layers_train_the_same_on_cuda keeps the path
def test_subclassed_model_with_add_loss_and_loss_function_on_cuda(tmp_path):
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")

    class Regularized(keras.Model):
        def __init__(self):
            super().__init__()
            self.block = MLPBlock()
            self.reg = ActivityRegularizationLayer(0.1)

        def call(self, inputs):
            return self.reg(self.block(inputs))

    rng = np.random.default_rng(8)
    x, y = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(5, 1))
    runs = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            keras.utils.set_random_seed(9)
            model = Regularized()
            model(x[:1])
            if runs:
                model.set_weights(runs[0][0])
            start = model.get_weights()
            model.compile("sgd", loss=custom_mean_squared_error)
            h = model.fit(x, y, epochs=2, batch_size=5, verbose=0)
            model.save_weights(tmp_path / f"{device}.weights.h5")
            runs.append((start, model.get_weights(), h.history["loss"]))
        finally:
            config.set_device("cpu")
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-5)
    loaded = Regularized()
    loaded(x[:1])
    loaded.load_weights(tmp_path / "cuda.weights.h5")
    for a, b in zip(runs[1][1], loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
