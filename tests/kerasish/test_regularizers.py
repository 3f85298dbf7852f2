"""kerasish.regularizers and kerasish.constraints: values and configs against real Keras 3,
attachment to weights by Layer (var.regularizer / var.constraint), refusals by name, and
configs that cross to Keras and back."""

import numpy as np
import pytest

import kerasish
from kerasish import constraints as C
from kerasish import regularizers as R
from tests.kerasish.keras3 import real_keras

L = kerasish.layers


def _np(t):
    return np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, np.float64)


def test_regularizer_values_and_configs_match_keras():
    keras = real_keras()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    x[0, 0] = 0.0
    pairs = [(R.L1(0.3), keras.regularizers.L1(0.3)), (R.L2(0.1), keras.regularizers.L2(0.1)),
             (R.L1L2(0.01, 0.02), keras.regularizers.L1L2(0.01, 0.02)),
             (R.get("l1"), keras.regularizers.get("l1")),
             (R.get("L2"), keras.regularizers.get("L2")),
             (R.get("l1l2"), keras.regularizers.get("l1l2")),
             (R.l1_l2(l1=0.5), keras.regularizers.l1_l2(l1=0.5))]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours(x), _np(theirs(x)), rtol=1e-5, atol=1e-7,
                                   err_msg=type(ours).__name__)
        assert R.serialize(ours) == keras.regularizers.serialize(theirs)
        assert (ours.l1, ours.l2) == (getattr(theirs, "l1", 0.0) and float(theirs.l1),
                                      getattr(theirs, "l2", 0.0) and float(theirs.l2))
        back = keras.regularizers.deserialize(R.serialize(ours))
        assert back.get_config() == ours.get_config()
        assert R.deserialize(keras.regularizers.serialize(theirs)).get_config() == \
            theirs.get_config()
    assert R.get("l1_l2").get_config() == {"l1": 0.01, "l2": 0.01}  # tf.keras 2's string


def test_constraint_values_and_configs_match_keras():
    keras = real_keras()
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((7, 3)).astype(np.float32)
    conv = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
    pairs = [(C.MaxNorm(1.5), keras.constraints.MaxNorm(1.5), dense),
             (C.max_norm(1.0, axis=[0, 1, 2]), keras.constraints.max_norm(1.0, axis=[0, 1, 2]),
              conv),
             (C.UnitNorm(axis=1), keras.constraints.UnitNorm(axis=1), dense),
             (C.MinMaxNorm(0.5, 1.2, 0.7, axis=0), keras.constraints.MinMaxNorm(0.5, 1.2, 0.7),
              dense),
             (C.NonNeg(), keras.constraints.NonNeg(), conv),
             (C.get("non_neg"), keras.constraints.get("non_neg"), dense),
             (C.get("unit_norm"), keras.constraints.get("unit_norm"), dense)]
    for ours, theirs, w in pairs:
        np.testing.assert_allclose(ours(w), _np(theirs(w)), rtol=1e-5, atol=1e-6,
                                   err_msg=type(ours).__name__)
        assert C.serialize(ours) == keras.constraints.serialize(theirs)
        assert C.deserialize(keras.constraints.serialize(theirs)).get_config() == \
            theirs.get_config()


def test_constraint_apply_on_the_variable_buffer(on_device):
    layer = L.Dense(3, kernel_constraint=C.MaxNorm(0.5), bias_constraint="non_neg")
    kerasish.Sequential([L.Input((4,)), layer])
    layer.bias.assign(np.array([-1.0, 0.5, -0.0], np.float32))
    before = layer.kernel.numpy()
    layer.kernel.constraint.apply(layer.kernel.value)  # what the engine calls after updates
    layer.bias.constraint.apply(layer.bias.value)
    np.testing.assert_allclose(layer.kernel.numpy(), C.MaxNorm(0.5)(before), rtol=1e-6)
    assert np.all(np.linalg.norm(layer.kernel.numpy(), axis=0) <= 0.5 + 1e-6)
    np.testing.assert_array_equal(layer.bias.numpy(), [0.0, 0.5, 0.0])


def _weights(layer):
    return {w.name: (w.regularizer, w.constraint) for w in layer.weights}


def test_layers_attach_rules_to_the_weights_they_name():
    dense = L.Dense(3, kernel_regularizer=R.L2(0.01), bias_constraint=C.NonNeg(),
                    activity_regularizer="l1")
    conv = L.Conv2D(2, 3, kernel_constraint=C.MaxNorm(2, axis=[0, 1, 2]), bias_regularizer="l2")
    kerasish.Sequential([L.Input((6, 6, 2)), conv, L.Flatten(), dense])
    w = _weights(dense)
    assert isinstance(w["kernel"][0], R.L2) and w["kernel"][1] is None
    assert w["bias"][0] is None and isinstance(w["bias"][1], C.NonNeg)
    assert isinstance(dense.activity_regularizer, R.L1)
    assert isinstance(_weights(conv)["bias"][0], R.L2)
    assert set(dense._weight_rules) == {"kernel", "bias"}

    emb = L.Embedding(5, 3, embeddings_regularizer=R.L1(0.1), embeddings_constraint="unit_norm")
    kerasish.Sequential([L.Input((4,)), emb])
    assert isinstance(_weights(emb)["embeddings"][1], C.UnitNorm)
    dw = L.DepthwiseConv2D(3, depthwise_regularizer="l2", depthwise_constraint="non_neg")
    sep = L.SeparableConv2D(2, 3, pointwise_constraint="non_neg", depthwise_regularizer="l1")
    kerasish.Sequential([L.Input((7, 7, 2)), dw, sep])
    assert isinstance(_weights(dw)["kernel"][0], R.L2)  # Keras names it "kernel" too
    assert isinstance(_weights(sep)["pointwise_kernel"][1], C.NonNeg)
    assert isinstance(_weights(sep)["depthwise_kernel"][0], R.L1)
    bn = L.BatchNormalization(gamma_constraint="non_neg", beta_regularizer=R.L2(0.2))
    ln = L.LayerNormalization(beta_regularizer="l2")
    kerasish.Sequential([L.Input((4,)), bn, ln])
    assert isinstance(_weights(bn)["gamma"][1], C.NonNeg)
    assert _weights(bn)["beta"][0].l2 == 0.2
    assert _weights(bn)["moving_mean"] == (None, None)
    assert isinstance(_weights(ln)["beta"][0], R.L2)


class _Scaled(kerasish.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), name="kernel",
                                 regularizer=R.L1(0.5), constraint="non_neg")
        self.v = self.add_weight(shape=(2,), name="other")

    def call(self, x):
        return x * self.w


def test_explicit_add_weight_rules_win():
    layer = _Scaled(kernel_regularizer=R.L2(0.1))
    layer.build((None, 3))
    assert layer.w.regularizer.l1 == 0.5 and isinstance(layer.w.constraint, C.NonNeg)
    assert (layer.v.regularizer, layer.v.constraint) == (None, None)


class L2Like(R.Regularizer):  # Keras's docstring example: a custom L2, accepted
    def __init__(self, l2=0.0):
        self.l2 = l2

    def __call__(self, x):
        return self.l2 * float(np.sum(np.square(x)))

    def get_config(self):
        return {"l2": float(self.l2)}


class Cubic(R.Regularizer):
    def __init__(self, l2=0.1):
        self.l2 = l2

    def __call__(self, x):
        return self.l2 * float(np.sum(np.abs(x) ** 3))


def test_unsupported_rules_are_refused_by_name():
    layer = L.Dense(2, kernel_regularizer=L2Like(0.5))
    assert layer.kernel_regularizer.l2 == 0.5
    with pytest.raises(ValueError, match=r"Dense 'dense_1': kernel_regularizer=.*Cubic.* is "
                                         r"not supported: kerasish runs regularizers as a "
                                         r"fused L1/L2 kernel"):
        L.Dense(2, kernel_regularizer=Cubic())
    with pytest.raises(ValueError, match="bias_regularizer=.*no l1/l2 attributes"):
        L.Dense(2, bias_regularizer=lambda w: 0.01 * np.sum(w))
    with pytest.raises(ValueError, match="OrthogonalRegularizer is not supported"):
        L.Dense(2, kernel_regularizer="orthogonal_regularizer")
    with pytest.raises(ValueError, match="Could not interpret regularizer identifier: 'l3'"):
        L.Dense(2, kernel_regularizer="l3")
    with pytest.raises(ValueError, match="Invalid value for argument l2"):
        R.L2(-0.1)

    class OnlyCall(C.Constraint):
        def __call__(self, w):
            return np.clip(w, -1, 1)

    with pytest.raises(ValueError, match="kernel_constraint=.*overrides __call__ but not apply"):
        L.Dense(2, kernel_constraint=OnlyCall())
    with pytest.raises(ValueError, match="kernel_constraint=.*is not supported"):
        L.Dense(2, kernel_constraint=lambda w: w)
    with pytest.raises(ValueError, match="DepthwiseConv2D .*: kernel_regularizer and "
                                         "depthwise_regularizer both govern weight 'kernel'"):
        L.DepthwiseConv2D(3, kernel_regularizer="l2", depthwise_regularizer="l1")
    conv = L.Conv1D(2, 3, kernel_constraint=C.MaxNorm(axis=[0, 2]))
    with pytest.raises(ValueError, match="Conv1D 'conv1d': weight 'kernel'.*consecutive axes"):
        kerasish.Sequential([L.Input((5, 2)), conv])
    with pytest.raises(ValueError, match="Dropout 'dropout' has no weights; received "
                                         "kernel_regularizer"):
        kerasish.Sequential([L.Input((5,)), L.Dropout(0.5, kernel_regularizer="l2")])
    dense = L.Dense(2, kernel_constraint=C.MaxNorm(max_value=-1))
    with pytest.raises(ValueError, match="weight 'kernel'.*max_value >= 0"):
        kerasish.Sequential([L.Input((5,)), dense])


def test_untrusted_configs_are_refused():
    with pytest.raises(ValueError, match="Unknown regularizer class: 'os.system'"):
        R.deserialize({"class_name": "os.system", "config": {}})
    with pytest.raises(ValueError, match="Regularizer L2: bad config"):
        R.deserialize({"class_name": "L2", "config": {"l2": 0.1, "evil": 1}})
    with pytest.raises(ValueError, match="Unknown constraint class: 'Exec'"):
        C.deserialize({"module": "keras.constraints", "class_name": "Exec", "config": {}})
    with pytest.raises(ValueError, match="Could not interpret constraint config"):
        C.get({"config": {}})


def test_configs_cross_with_keras_both_ways():
    keras = real_keras()
    ours = L.Dense(3, kernel_regularizer=R.L2(0.01), kernel_constraint=C.MaxNorm(2),
                   bias_regularizer=R.L1L2(0.1, 0.2), bias_constraint="non_neg",
                   activity_regularizer=R.L1(0.05))
    theirs = keras.layers.Dense.from_config(ours.get_config())
    assert theirs.get_config()["kernel_regularizer"] == ours.get_config()["kernel_regularizer"]
    for key in ("kernel_constraint", "bias_regularizer", "bias_constraint",
                "activity_regularizer"):
        assert keras.saving.serialize_keras_object(getattr(theirs, key)) == \
            ours.get_config()[key], key
    k = keras.layers.Dense(3, kernel_regularizer=keras.regularizers.L2(0.01),
                           kernel_constraint=keras.constraints.MaxNorm(2),
                           activity_regularizer="l1l2")
    back = L.Dense.from_config(k.get_config())
    for key in ("kernel_regularizer", "kernel_constraint", "activity_regularizer"):
        assert back.get_config()[key] == k.get_config()[key], key
    assert back.get_config()["bias_regularizer"] is None  # written as None, as Keras does
    conv = keras.layers.Conv2D(2, 3, kernel_constraint=keras.constraints.UnitNorm([0, 1, 2]))
    model = keras.Sequential([keras.Input((5, 5, 1)), conv])
    loaded = kerasish.models.model_from_json(model.to_json())
    kc = loaded.layers[-1].kernel.constraint
    assert isinstance(kc, C.UnitNorm) and kc.axis == [0, 1, 2]


def test_layers_without_rules_write_keras_none_rule_keys():
    config = L.Dense(2).get_config()  # Keras's Dense writes its four rule keys as None
    rules = {k: v for k, v in config.items() if k.endswith(("_regularizer", "_constraint"))}
    assert rules == {f"{w}_{kind}": None for w in ("kernel", "bias")
                     for kind in ("regularizer", "constraint")}
    assert not any(k.endswith(("_regularizer", "_constraint")) for k in L.Flatten().get_config())


def test_penalty_ops_give_keras_losses_and_gradients(device):
    """What the engine will run per step (ops on the weights and the output) equals
    Keras's layer.losses (activity penalty over the batch size) and its autograd."""
    keras = real_keras()
    import torch

    from kernels_numba.ops import regularize
    from kernels_numba.testing import host, on

    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = np.array([0.0, 0.5, -0.25], np.float32)  # sign(0) = 0 in the L1 gradient
    k = keras.layers.Dense(3, kernel_regularizer=keras.regularizers.L1L2(0.01, 0.02),
                           bias_regularizer=keras.regularizers.L1(0.3),
                           activity_regularizer=keras.regularizers.L2(0.05))
    k.build((None, 4))
    k.set_weights([w, b])
    y = k(x)
    activity, *weight_terms = k.losses  # add_loss'd activity penalty first, then weights'
    total = float(sum(k.losses).detach())
    gw, gb = torch.autograd.grad(sum(weight_terms), [k.kernel.value, k.bias.value])
    (gy,) = torch.autograd.grad(activity, [y])  # dL/dy; its path into w is the layer's

    pen = on(device, np.zeros(1, np.float32))
    dw, db = on(device, np.zeros_like(w), np.zeros_like(b))
    dy = on(device, np.zeros((5, 3), np.float32))
    regularize.weight_penalty(pen, dw, on(device, w), l1=0.01, l2=0.02)
    regularize.weight_penalty(pen, db, on(device, b), l1=0.3, l2=0.0)
    regularize.activity_penalty(pen, dy, on(device, _np(y).astype(np.float32)), l1=0.0,
                                l2=0.05, scale=1.0 / 5)
    np.testing.assert_allclose(host(pen), [total], rtol=1e-5)
    np.testing.assert_allclose(host(dw), _np(gw), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(host(db), _np(gb), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(host(dy), _np(gy), rtol=1e-5, atol=1e-7)


def test_registered_custom_rules_round_trip():
    from kerasish.saving import register_keras_serializable

    @register_keras_serializable(package="Reg", name="halfl2")
    class HalfL2(R.Regularizer):
        def __init__(self, l2=0.1):
            self.l2, self.l1 = float(l2), 0.0

        def __call__(self, x):
            return self.l2 * float(np.sum(np.square(x)))

        def get_config(self):
            return {"l2": self.l2}

    @register_keras_serializable(package="Con")
    class Clip(C.Constraint):
        def apply(self, array):  # a device-side projection: NonNeg then nothing else
            C.NonNeg().apply(array)

    layer = L.Dense(2, kernel_regularizer=HalfL2(0.3), kernel_constraint=Clip())
    config = layer.get_config()
    assert config["kernel_regularizer"]["registered_name"] == "Reg>halfl2"
    assert config["kernel_constraint"]["registered_name"] == "Con>Clip"
    back = L.Dense.from_config(config)
    assert isinstance(back.kernel_regularizer, HalfL2) and back.kernel_regularizer.l2 == 0.3
    assert isinstance(back.kernel_constraint, Clip)
    np.testing.assert_array_equal(Clip()(np.array([-1.0, 2.0])), [0.0, 2.0])


def test_keras_files_cross_both_ways_with_rules(tmp_path):
    keras = real_keras()
    model = kerasish.Sequential([
        L.Input((4,)),
        L.Dense(3, kernel_regularizer=R.L2(0.01), kernel_constraint=C.MaxNorm(2),
                activity_regularizer="l1"),
        L.Dense(1, bias_constraint="non_neg")])
    model.compile(optimizer="adam", loss="mse")
    model.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    assert theirs.layers[0].kernel_regularizer.get_config() == {"l2": 0.01}
    assert theirs.layers[0].kernel_constraint.get_config() == {"max_value": 2, "axis": 0}
    assert isinstance(theirs.layers[1].bias_constraint, keras.constraints.NonNeg)
    theirs.save(tmp_path / "theirs.keras")
    back = kerasish.models.load_model(tmp_path / "theirs.keras")
    assert back.layers[0].kernel.regularizer.l2 == 0.01
    assert isinstance(back.layers[0].activity_regularizer, R.L1)
    assert isinstance(back.layers[1].bias.constraint, C.NonNeg)
