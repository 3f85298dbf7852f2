"""The functional API and the layer graph: symbolic calls, Model(inputs, outputs), shared
layers, nested models, several inputs/outputs, the plan, errors (issue 13)."""

import numpy as np
import pytest

import kernels_numba
import kerasish as keras
from kerasish import config, layers
from kerasish.engine.executor import PREDICT, TRAIN


def two_in_two_out(shared_units=5, activation="relu"):
    """Two inputs, a shared layer, a merge, a nested Sequential, two outputs."""
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    shared = layers.Dense(shared_units, activation="tanh", name="shared")
    inner = keras.Sequential([keras.Input((2 * shared_units,)),
                              layers.Dense(6, activation=activation, name="d6"),
                              layers.Dense(2, name="d2")], name="inner")
    x, y = shared(a), shared(layers.Dense(4, name="proj")(b))
    z = layers.Concatenate(name="cat")([x, y])
    o1 = layers.Dense(3, activation="softmax", name="out1")(z)
    return keras.Model(inputs=[a, b], outputs=[o1, inner(z)], name="func")


def data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    x = [rng.normal(size=(n, 4)).astype(np.float32), rng.normal(size=(n, 3)).astype(np.float32)]
    y = [rng.integers(0, 3, n), rng.normal(size=(n, 2)).astype(np.float32)]
    return x, y


def compiled(model, optimizer="sgd"):
    model.compile(optimizer, ["sparse_categorical_crossentropy", "mean_squared_error"],
                  loss_weights=[1.0, 0.5], metrics=[["accuracy"], []])
    return model


def gradients(model, x, y):
    """dL/dw for every trainable weight, from one plan step without the update."""
    xs, ys = model._check_x(x, "test"), model._check_y(y, "test")
    for w in model.trainable_weights:
        kernels_numba.ops.fill(w.grad, 0.0)
    model._executor(len(xs[0]), TRAIN).train_step(xs, ys, apply=False)
    return [kernels_numba.to_host(w.grad).astype(np.float64) for w in model.trainable_weights]


def total_loss(model, x, y):
    return float(model.evaluate(x, y, batch_size=len(x[0]), verbose=0)[0])


# -- symbolic calls and layers on arrays ---------------------------------------------------

def test_input_is_symbolic_and_layers_record_nodes():
    inputs = keras.Input((3,), name="feats")
    dense = layers.Dense(4)
    out = dense(inputs)
    assert out.shape == (None, 4) and inputs.shape == (None, 3)
    assert dense.input is inputs and dense.output is out
    assert dense.input_shape == (None, 3) and dense.output_shape == (None, 4)
    model = keras.Model(inputs, out)
    assert model.inputs == [inputs] and model.outputs == [out]
    assert model.input is inputs and model.output is out
    with pytest.raises(TypeError, match="symbolic"):
        np.asarray(out)


def test_layers_called_on_arrays_run_eagerly():
    layer1, layer2, layer3 = layers.Dense(2, activation="relu"), layers.Dense(3), \
        layers.Dense(4)
    y = layer3(layer2(layer1(np.ones((3, 3)))))
    assert isinstance(y, np.ndarray) and y.shape == (3, 4)
    w1, b1 = layer1.get_weights()
    h = np.maximum(np.ones((3, 3)) @ w1 + b1, 0)
    w2, b2 = layer2.get_weights()
    w3, b3 = layer3.get_weights()
    np.testing.assert_allclose(y, (h @ w2 + b2) @ w3 + b3, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="training=True"):
        layer1(np.ones((3, 3)), training=True)


# -- Model(inputs, outputs) ------------------------------------------------------------------

def test_layer_order_and_config_match_keras_semantics():
    model = two_in_two_out()
    # Keras 3 orders layers by depth from the outputs, ties by first visit.
    assert [l.name for l in model.layers] == ["b", "a", "proj", "shared", "cat", "out1",
                                              "inner"]
    assert model.output_names == ["out1", "inner"] and model.input_names == ["a", "b"]
    config = model.get_config()
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"] == [["out1", 0, 0], ["inner", 0, 0]]
    shared = next(e for e in config["layers"] if e["name"] == "shared")
    assert [n["args"][0]["config"]["keras_history"] for n in shared["inbound_nodes"]] == \
        [["a", 0, 0], ["proj", 0, 0]]
    clone = keras.Model.from_config(config)
    assert [l.name for l in clone.layers] == [l.name for l in model.layers]
    x, _ = data()
    clone.set_weights(model.get_weights())
    for p, q in zip(model.predict(x, verbose=0), clone.predict(x, verbose=0)):
        np.testing.assert_array_equal(p, q)


def test_shared_layer_has_one_set_of_weights_and_summed_gradients():
    model = compiled(two_in_two_out(activation="tanh"))  # smooth: no kinks for the probes
    assert len(model.weights) == 2 + 2 + 2 + 4  # proj, shared (once), out1, inner
    x, y = data(n=6)
    analytic = gradients(model, x, y)
    base = model.get_weights()
    eps = 1e-2
    for k, var in enumerate(model.trainable_weights):
        value = base[k].astype(np.float64)
        numeric = np.zeros_like(value)
        for i in list(np.ndindex(value.shape))[:6]:  # a few entries of every weight
            losses = []
            for d in (eps, -eps):
                probe = value.copy()
                probe[i] += d
                var.assign(probe)
                losses.append(total_loss(model, x, y))
            var.assign(value)
            numeric[i] = (losses[0] - losses[1]) / (2 * eps)
            assert abs(analytic[k][i] - numeric[i]) <= 2e-3 + 3e-2 * abs(numeric[i]), \
                (var.path, i, analytic[k][i], numeric[i])


def test_fan_out_and_merges_backward_match_finite_differences():
    inputs = keras.Input((5,))
    h = layers.Dense(4, activation="tanh")(inputs)
    branch = layers.Dense(4, activation="sigmoid")(h)  # h feeds three consumers
    merged = layers.Add()([h, branch, layers.Multiply()([h, branch])])
    model = keras.Model(inputs, layers.Dense(2)(merged))
    model.compile("sgd", "mean_squared_error")
    rng = np.random.default_rng(2)
    x, y = [rng.normal(size=(7, 5)).astype(np.float32)], [rng.normal(size=(7, 2))]
    analytic = gradients(model, x, y)
    for k, var in enumerate(model.trainable_weights):
        value = var.numpy().astype(np.float64)
        for i in list(np.ndindex(value.shape))[:5]:
            losses = []
            for d in (1e-2, -1e-2):
                probe = value.copy()
                probe[i] += d
                var.assign(probe)
                losses.append(float(model.evaluate(x, y, verbose=0)))
            var.assign(value)
            numeric = (losses[0] - losses[1]) / 2e-2
            assert abs(analytic[k][i] - numeric) <= 2e-3 + 3e-2 * abs(numeric)


def test_multi_output_fit_evaluate_predict_and_log_names():
    model = compiled(two_in_two_out(), optimizer="adam")
    x, y = data()
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0, validation_data=(x, y))
    assert sorted(history.history) == ["inner_loss", "loss", "out1_accuracy", "out1_loss",
                                       "val_inner_loss", "val_loss", "val_out1_accuracy",
                                       "val_out1_loss"]
    h = history.history
    np.testing.assert_allclose(h["loss"][-1], h["out1_loss"][-1] + 0.5 * h["inner_loss"][-1],
                               rtol=1e-6)
    logs = model.evaluate({"a": x[0], "b": x[1]}, {"out1": y[0], "inner": y[1]}, verbose=0,
                          return_dict=True)
    assert list(logs) == ["loss", "inner_loss", "out1_accuracy", "out1_loss"]
    assert model.metrics_names == list(logs)
    out = model.predict(x, verbose=0)
    assert isinstance(out, list) and [o.shape for o in out] == [(20, 3), (20, 2)]
    one = model(x)  # model(x) on arrays: inference, the same numbers
    np.testing.assert_allclose(one[0], out[0], rtol=1e-6)


def test_dict_outputs_and_loss_dicts():
    inputs = keras.Input((3,), name="x")
    model = keras.Model({"x": inputs}, {"cls": layers.Dense(2, activation="softmax")(inputs),
                                        "reg": layers.Dense(1)(inputs)})
    model.compile("sgd", loss={"cls": "sparse_categorical_crossentropy",
                               "reg": "mean_squared_error"}, loss_weights={"reg": 2.0})
    x = np.ones((4, 3), np.float32)
    model.fit({"x": x}, {"cls": np.zeros(4), "reg": np.ones(4)}, verbose=0)
    out = model.predict({"x": x}, verbose=0)
    assert sorted(out) == ["cls", "reg"] and out["reg"].shape == (4, 1)


def test_feature_extraction_and_transfer_learning_idioms():
    initial = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="relu"),
                                layers.Dense(4, activation="relu"), layers.Dense(3)])
    extractor = keras.Model(inputs=initial.inputs,
                            outputs=[layer.output for layer in initial.layers])
    feats = extractor(np.ones((2, 6), np.float32))
    assert [f.shape for f in feats] == [(2, 5), (2, 4), (2, 3)]
    base = keras.Sequential([keras.Input((6,)), layers.Dense(5, activation="relu")])
    base.trainable = False
    model = keras.Sequential([base, layers.Dense(2)])  # a model inside a Sequential
    model.compile("adam", "mean_squared_error")
    frozen = [w.copy() for w in base.get_weights()]
    model.fit(np.ones((8, 6), np.float32), np.zeros((8, 2)), epochs=2, verbose=0)
    for before, after in zip(frozen, base.get_weights()):
        np.testing.assert_array_equal(before, after)
    assert len(model.trainable_weights) == 2 and len(model.weights) == 4
    outer = keras.Sequential([keras.Input((6,)), model, layers.Softmax()])  # and deeper
    assert outer.predict(np.ones((3, 6), np.float32), verbose=0).shape == (3, 2)


def test_sequential_equals_the_same_functional_graph_bit_for_bit():
    def build(functional):
        keras.utils.set_random_seed(1)  # the same initial weights and dropout seed
        dense1, drop = layers.Dense(16, activation="relu"), layers.Dropout(0.3)
        dense2 = layers.Dense(3, activation="softmax")
        if not functional:
            return keras.Sequential([keras.Input((8,)), dense1, drop, dense2])
        inputs = keras.Input((8,))
        return keras.Model(inputs, dense2(drop(dense1(inputs))))

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 8)).astype(np.float32), rng.integers(0, 3, 40)
    runs = []
    for functional in (False, True):
        model = build(functional)
        model.compile("adam", "sparse_categorical_crossentropy")
        keras.utils.set_random_seed(5)
        runs.append((model.fit(x, y, epochs=2, batch_size=16, verbose=0).history["loss"],
                     model.get_weights()))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)


# -- the plan --------------------------------------------------------------------------

def test_parameters_and_gradients_live_in_two_contiguous_blocks():
    model = compiled(two_in_two_out())
    model._executor(8, TRAIN)
    block, grads = model._parameter_block, model._gradient_block
    for w in model.weights:
        assert np.shares_memory(w.value, block)
    for w in model.trainable_weights:
        assert np.shares_memory(w.grad, grads)


def test_inference_reuses_buffers_by_lifetime():
    inputs = keras.Input((32,))
    h = inputs
    for _ in range(20):
        h = layers.Dense(32, activation="relu")(h)
    model = keras.Model(inputs, h)
    ex = model._executor(4, PREDICT)
    assert len(ex.blocks) <= 3  # 20 activations, at most 3 alive at once
    np.testing.assert_allclose(model.predict(np.ones((4, 32)), verbose=0),
                               model.predict(np.ones((4, 32)), verbose=0))


def test_plans_are_bounded_and_sized_by_the_data():
    model = keras.Sequential([keras.Input((10,)), layers.Dense(4)])
    x = np.ones((300, 10), np.float32)
    for n in range(200, 260):
        model.predict_on_batch(x[:n])
    assert len(model._executors) <= 6
    model.compile("sgd", "mean_squared_error")
    model.fit(x[:40], np.zeros((40, 4)), batch_size=10**9, verbose=0)
    assert max(k[0] for k in model._executors if k[1] == TRAIN) == 40


def test_loading_a_long_sequential_builds_each_layer_once(monkeypatch):
    from kerasish.layers.layer import Layer

    model = keras.Sequential([keras.Input((3,))] + [layers.Activation("linear")
                                                    for _ in range(300)])
    calls = []
    real = Layer._build_once
    monkeypatch.setattr(Layer, "_build_once", lambda self, s: calls.append(1) or real(self, s))
    keras.models.model_from_json(model.to_json())
    assert len(calls) == 300  # linear in the number of layers, not quadratic


# -- errors ----------------------------------------------------------------------------

def test_graph_errors_are_clear():
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    dense = layers.Dense(2, name="d")
    dense(a)
    with pytest.raises(ValueError, match=r"layer 'd'.*expected shape \(None, 4\).*\(None, 3\)"):
        dense(b)
    other = keras.Input((4,), name="other")
    with pytest.raises(ValueError, match="graph disconnected.*'other'"):
        keras.Model(a, layers.Add()([a, other]))
    with pytest.raises(ValueError, match="input 'b' is not used"):
        keras.Model([a, b], layers.Dense(1)(a))
    with pytest.raises(ValueError, match="names must be unique.*'twin'"):
        keras.Model(a, layers.Dense(1, name="twin")(layers.Dense(4, name="twin")(a)))
    with pytest.raises(ValueError, match="symbolic tensor.*ndarray"):
        keras.Model(inputs=np.ones((2, 4)), outputs=layers.Dense(1)(a))
    with pytest.raises(ValueError, match="Concatenate|shape"):
        layers.Concatenate(axis=1)([keras.Input((2, 3)), keras.Input((4, 5))])


def test_a_plan_too_big_is_refused_before_allocating(monkeypatch):
    from kerasish.engine import executor

    monkeypatch.setattr(executor, "MAX_PLAN_BYTES", 1 << 20)
    model = keras.Model(*(lambda i: (i, layers.Dense(4)(i)))(keras.Input((100000,))))
    before = kernels_numba.allocation_count()
    with pytest.raises(MemoryError, match="batch size 32 needs .* bytes"):
        model.predict_on_batch(np.ones((32, 100000), np.float32))
    assert kernels_numba.allocation_count() == before


# -- CUDA under the simulator ------------------------------------------------------------

@pytest.mark.cudasim
@pytest.mark.slow  # model-level; its dense/merge/loss kernels run op by op in tests/kernels_numba
def test_two_input_two_output_model_trains_the_same_on_cuda():
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x, y = data(n=7)
    results = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            keras.utils.set_random_seed(4)
            model = compiled(two_in_two_out(shared_units=3))
            if results:
                model.set_weights(results[0][0])
            start = model.get_weights()
            history = model.fit(x, y, epochs=2, batch_size=7, shuffle=False, verbose=0)
            results.append((start, model.get_weights(), history.history))
        finally:
            config.set_device("cpu")
    (_, w_cpu, h_cpu), (_, w_cuda, h_cuda) = results
    for a, b in zip(w_cpu, w_cuda):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for key in h_cpu:
        np.testing.assert_allclose(h_cuda[key], h_cpu[key], rtol=1e-5)


def test_tf_keras_2_functional_configs_load():
    """tf.keras 2.x wrote nodes as [[layer, node_index, tensor_index, kwargs], ...]."""
    import json

    config = {"class_name": "Functional", "config": {
        "name": "model", "layers": [
            {"class_name": "InputLayer", "name": "input_1", "inbound_nodes": [],
             "config": {"batch_input_shape": [None, 4], "dtype": "float32",
                        "sparse": False, "ragged": False, "name": "input_1"}},
            {"class_name": "Dense", "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]],
             "config": {"name": "dense", "trainable": True, "dtype": "float32", "units": 3,
                        "activation": "relu", "use_bias": True}},
            {"class_name": "Dense", "name": "dense_1",
             "inbound_nodes": [[["input_1", 0, 0, {}]]],
             "config": {"name": "dense_1", "trainable": True, "dtype": "float32",
                        "units": 3, "activation": "linear", "use_bias": True}},
            {"class_name": "Add", "name": "add", "config": {"name": "add", "trainable": True,
                                                           "dtype": "float32"},
             "inbound_nodes": [[["dense", 0, 0, {}], ["dense_1", 0, 0, {}]]]}],
        "input_layers": [["input_1", 0, 0]], "output_layers": [["add", 0, 0]]},
        "keras_version": "2.15.0", "backend": "tensorflow"}
    model = keras.models.model_from_json(json.dumps(config))
    assert [l.name for l in model.layers] == ["input_1", "dense", "dense_1", "add"]
    assert model.predict(np.ones((2, 4), np.float32), verbose=0).shape == (2, 3)
