"""Nadam, Adamax, Adadelta, Lion and Ftrl against real Keras 3 (torch backend): the same
initial weights and gradients give the same trajectory step by step (1e-5 relative), on
both devices and through the one-launch parameter block; configs, `get` names, slot
variables in Keras order, and optimizer state crossing .h5 both ways. Also Keras 3's
learning-rate variable (`opt.learning_rate = x` keeps it; `.assign()` works)."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="the comparison needs torch (Keras's backend)")
real = pytest.importorskip("keras", reason="the comparison needs Keras 3")

import kernels_numba  # noqa: E402
import kerasish  # noqa: E402
from kerasish import optimizers  # noqa: E402
from kerasish.variables import Variable  # noqa: E402

SHAPES, STEPS, RTOL = [(5, 3), (7,)], 5, 1e-5
CASES = {
    "nadam": ("Nadam", {"learning_rate": 0.01}),
    "nadam_betas": ("Nadam", {"learning_rate": 0.02, "beta_1": 0.8, "beta_2": 0.99,
                              "epsilon": 1e-4}),
    "adamax": ("Adamax", {"learning_rate": 0.01}),
    "adamax_betas": ("Adamax", {"learning_rate": 0.02, "beta_1": 0.5, "beta_2": 0.9}),
    "adadelta": ("Adadelta", {"learning_rate": 1.0}),
    "adadelta_rho": ("Adadelta", {"learning_rate": 0.5, "rho": 0.8, "epsilon": 1e-5}),
    "lion": ("Lion", {"learning_rate": 0.01}),
    "lion_betas": ("Lion", {"learning_rate": 0.003, "beta_1": 0.5, "beta_2": 0.9}),
    "ftrl": ("Ftrl", {"learning_rate": 0.1}),
    "ftrl_regularized": ("Ftrl", {"learning_rate": 0.1, "learning_rate_power": -0.7,
                                  "initial_accumulator_value": 0.3,
                                  "l1_regularization_strength": 0.05,
                                  "l2_regularization_strength": 0.1,
                                  "l2_shrinkage_regularization_strength": 0.02, "beta": 0.4}),
}


def data(seed=3, scale=1.0):
    r = np.random.default_rng(seed)
    w0 = [r.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[(scale * r.standard_normal(s)).astype(np.float32) for s in SHAPES]
             for _ in range(STEPS)]
    return w0, grads


def keras_trajectory(cls, kwargs, w0, grads):
    opt = getattr(real.optimizers, cls)(**kwargs)
    variables = [real.Variable(w.copy(), name=f"w{k}") for k, w in enumerate(w0)]
    out = []
    for step in grads:
        opt.apply_gradients([(real.ops.convert_to_tensor(g), v) for g, v in zip(step, variables)])
        out.append([real.ops.convert_to_numpy(v.value).copy() for v in variables])
    return out, opt


def kerasish_trajectory(cls, kwargs, w0, grads, device, block=False):
    """Variables updated one by one, or (block=True) packed as the engine packs them:
    one parameter block with 16-element alignment gaps, one update launch per step."""
    opt = getattr(optimizers, cls)(**kwargs)
    variables = [Variable(w, f"w{k}", device=device, path=f"w{k}") for k, w in enumerate(w0)]
    opt.build(variables)
    if block:
        sizes = [-(-w.size // 16) * 16 for w in w0]
        params = kernels_numba.zeros((sum(sizes),), np.float32, device)
        gblock = kernels_numba.zeros((sum(sizes),), np.float32, device)
        offsets, start = {}, 0
        for var, w, size in zip(variables, w0, sizes):
            offsets[id(var)] = start
            var.value = params[start:start + w.size].reshape(w.shape)
            kernels_numba.copy_from_host(var.value, w)
            var.grad = gblock[start:start + w.size].reshape(w.shape)
            start += size
        opt.use_blocks(variables, params, gblock, offsets)
    out = []
    for step in grads:
        for var, g in zip(variables, step):
            kernels_numba.copy_from_host(var.grad, g)
        opt.apply(variables)
        out.append([var.numpy() for var in variables])
    if block:  # the alignment gaps stay zero
        gaps = np.ones(params.shape[0], bool)
        for var, w in zip(variables, w0):
            gaps[offsets[id(var)]:offsets[id(var)] + w.size] = False
        assert not kernels_numba.to_host(params)[gaps].any()
        assert not kernels_numba.to_host(gblock).any()
    return out, opt


def assert_same(got, want, what):
    for step, (a, b) in enumerate(zip(got, want)):
        for k, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=1e-6,
                                       err_msg=f"{what}: step {step + 1}, variable {k}")


@pytest.mark.parametrize("block", [False, True], ids=["per_variable", "block"])
@pytest.mark.parametrize("case", list(CASES))
def test_trajectory_matches_keras(device, case, block):
    cls, kwargs = CASES[case]
    w0, grads = data()
    want, theirs = keras_trajectory(cls, kwargs, w0, grads)
    got, ours = kerasish_trajectory(cls, kwargs, w0, grads, device, block)
    assert_same(got, want, case)
    # every optimizer variable, in Keras's order, with Keras's names
    va, vb = ours.variables, theirs.variables
    def names(vs):  # Keras numbers its unnamed variables (Nadam's u_product) per process
        return [v.name.split("_")[0] if v.name.startswith("variable") else v.name for v in vs]
    assert names(va) == names(vb)
    assert int(va[0].numpy()) == int(vb[0].numpy()) == STEPS
    for x, y in zip(va[1:], vb[1:]):
        np.testing.assert_allclose(np.asarray(x.numpy()), real.ops.convert_to_numpy(y.value),
                                   rtol=RTOL, atol=1e-6, err_msg=f"{case} {y.path}")


@pytest.mark.parametrize("cls", ["Nadam", "Adamax", "Adadelta", "Lion", "Ftrl"])
def test_weight_decay_matches_keras(device, cls):
    kwargs = {**dict(CASES[cls.lower()][1]), "weight_decay": 0.3}
    w0, grads = data(seed=5)
    want, _ = keras_trajectory(cls, kwargs, w0, grads)
    got, _ = kerasish_trajectory(cls, kwargs, w0, grads, device, block=True)
    assert_same(got, want, f"{cls} weight_decay")


@pytest.mark.parametrize("cls", ["SGD", "Adam", "RMSprop", "Adagrad", "AdamW", "Nadam",
                                 "Adamax", "Adadelta", "Lion", "Ftrl"])
def test_configs_match_keras(cls):
    import re
    # default names: Keras's snake_case of the class (it numbers later instances: _1, _2)
    assert getattr(optimizers, cls)().name == \
        re.sub(r"_\d+$", "", getattr(real.optimizers, cls)().name)
    kwargs = {"learning_rate": 0.02, "clipnorm": 1.5, "name": "opt"}
    ours, theirs = getattr(optimizers, cls)(**kwargs), getattr(real.optimizers, cls)(**kwargs)
    assert ours.get_config() == theirs.get_config()
    again = getattr(optimizers, cls).from_config(theirs.get_config())
    assert again.get_config() == theirs.get_config()
    assert type(optimizers.get(cls.lower())).__name__ == cls
    by_name = [o.get_config() for o in (optimizers.get(cls.lower()),
                                        real.optimizers.get(cls.lower()))]
    for config in by_name:  # Keras numbers the names of later instances (sgd_1, ...)
        config.pop("name")
    assert by_name[0] == by_name[1]


def test_keras_argument_checks():
    with pytest.raises(ValueError, match=r"Lion: argument `beta_1` must be in the \[0, 1\]"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="Ftrl: `learning_rate_power` needs to be negative"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="Ftrl: `l1_regularization_strength` needs to be "
                                         "positive or zero"):
        optimizers.Ftrl(l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="Nadam: use_ema=True .* is not supported"):
        optimizers.Nadam(use_ema=True)
    with pytest.raises(ValueError, match="Adamax: expected beta_1 to be a float"):
        optimizers.Adamax(beta_1="big")


def test_learning_rate_is_a_variable_as_in_keras():
    opt = optimizers.Adam(0.01)
    lr = opt.learning_rate
    assert float(lr) == pytest.approx(0.01) and lr == pytest.approx(0.01)
    opt.learning_rate = 1e-4  # assigns the variable: the same object afterwards
    assert opt.learning_rate is lr and float(lr) == pytest.approx(1e-4)
    opt.learning_rate.assign(3e-4)
    assert float(opt.learning_rate) == pytest.approx(3e-4)
    assert opt.variables[1] is lr and opt.variables[1].path == "adam/learning_rate"
    assert opt.get_config()["learning_rate"] == float(np.float32(3e-4))
    assert lr * 2 == pytest.approx(6e-4) and 1 - lr == pytest.approx(1 - 3e-4)
    assert lr < 1e-3 and np.asarray(lr).dtype == np.float32
    # the assigned rate is the one the next step uses
    w0, grads = data(seed=7)
    theirs = real.optimizers.SGD(0.5)
    theirs.learning_rate = 0.05
    theirs.learning_rate.assign(0.02)
    ours = optimizers.SGD(0.5)
    ours.learning_rate = 0.05
    ours.learning_rate.assign(0.02)
    var, kv = Variable(w0[0], "w", path="w"), real.Variable(w0[0].copy())
    ours.build([var])
    kernels_numba.copy_from_host(var.grad, grads[0][0])
    ours.apply([var])
    theirs.apply_gradients([(real.ops.convert_to_tensor(grads[0][0]), kv)])
    np.testing.assert_allclose(var.numpy(), real.ops.convert_to_numpy(kv.value), rtol=1e-6)


def test_learning_rate_with_a_schedule_is_not_settable():
    opt = optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 2, 0.5))
    assert isinstance(opt.learning_rate, float)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.3


LOSS = "sparse_categorical_crossentropy"


def _model(lib, seed):
    lib.utils.set_random_seed(seed)
    return lib.Sequential([lib.Input((6,)), lib.layers.Dense(5, activation="relu"),
                           lib.layers.Dense(3)])


@pytest.mark.parametrize("cls,kwargs", [
    ("Nadam", {"learning_rate": 0.01}), ("Adamax", {"learning_rate": 0.01}),
    ("Adadelta", {"learning_rate": 1.0}), ("Lion", {"learning_rate": 0.003}),
    ("Ftrl", {"learning_rate": 0.1, "l1_regularization_strength": 0.01}),
])
def test_state_crosses_h5_both_ways(tmp_path, cls, kwargs):
    r = np.random.default_rng(0)
    x, y = r.standard_normal((16, 6)).astype(np.float32), r.integers(0, 3, 16).astype(np.int32)
    theirs = _model(real, 1)
    theirs.compile(getattr(real.optimizers, cls)(**kwargs), LOSS)
    theirs.fit(x, y, batch_size=8, epochs=2, verbose=0)
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert type(ours.optimizer).__name__ == cls
    assert ours.optimizer.get_config() == theirs.optimizer.get_config()
    va, vb = ours.optimizer.variables, theirs.optimizer.variables
    assert len(va) == len(vb) and int(va[0].numpy()) == int(vb[0].numpy()) == 4
    for a, b in zip(va[1:], vb[1:]):
        np.testing.assert_allclose(np.asarray(a.numpy()), real.ops.convert_to_numpy(b.value),
                                   rtol=1e-6, atol=1e-7, err_msg=f"{cls} {b.path}")
    # resumed, one more epoch agrees with Keras's own next epoch
    ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-5)
    # and back: Keras reads ours (its h5 loader restores the iteration and learning rate)
    ours.save(tmp_path / "ours.h5")
    again = real.models.load_model(tmp_path / "ours.h5")
    assert type(again.optimizer).__name__.endswith(cls)
    assert int(again.optimizer.iterations) == 6
    assert float(again.optimizer.learning_rate) == pytest.approx(float(kwargs["learning_rate"]))
    np.testing.assert_allclose(again.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    restored = again.optimizer.variables
    if len(restored) == len(va):  # a Keras that restores the slots too
        for a, b in zip(ours.optimizer.variables[2:], restored[2:]):
            np.testing.assert_allclose(np.asarray(a.numpy()), real.ops.convert_to_numpy(b.value),
                                       rtol=1e-6, atol=1e-7)
