"""kerasish.GradientTape against PyTorch autograd (1e-5): an MLP, a small CNN with an
input gradient, several targets, nested/dict sources, output_gradients, ops on
Variables; TensorFlow's tape semantics: None (or zeros) for unreached sources,
persistent tapes, one gradient per non-persistent tape, stop_recording, watch; a
gradient of a gradient refused by name; a tape training loop matching torch's SGD."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kerasish as keras  # noqa: E402
from kerasish import layers, ops  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


def close(got, want, what=""):
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=RTOL, atol=ATOL,
                               err_msg=what)


def mlp(seed=0):
    model = keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="tanh"),
                              layers.Dense(2)])
    r = np.random.default_rng(seed)
    model.set_weights([r.standard_normal(w.shape).astype(np.float32)
                       for w in model.get_weights()])
    return model


def torch_mlp(model, x):
    w = [torch.tensor(v.numpy(), requires_grad=True) for v in model.trainable_weights]
    out = torch.tanh(torch.tensor(x) @ w[0] + w[1]) @ w[2] + w[3]
    return w, out


def data(n=5, seed=1):
    r = np.random.default_rng(seed)
    return r.standard_normal((n, 3)).astype(np.float32), \
        r.standard_normal((n, 2)).astype(np.float32)


def test_mlp_mse_and_values():
    model, (x, y) = mlp(), data()
    with keras.GradientTape() as tape:
        pred = model(x, training=True)
        loss = keras.losses.MeanSquaredError()(y, pred)
    grads = tape.gradient(loss, model.trainable_weights)
    w, out = torch_mlp(model, x)
    ref = ((out - torch.tensor(y)) ** 2).mean()
    for g, t in zip(grads, torch.autograd.grad(ref, w)):
        close(g, t)
    assert abs(float(loss) - ref.item()) < 1e-5
    close(pred.numpy(), out)
    assert np.asarray(pred).shape == (5, 2)


def test_cnn_sparse_ce_input_gradient_and_dict_sources():
    r = np.random.default_rng(0)
    model = keras.Sequential([keras.Input((6, 6, 2)), layers.Conv2D(3, 3, activation="relu"),
                              layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(4)])
    x = r.standard_normal((5, 6, 6, 2)).astype(np.float32)
    y = r.integers(0, 4, 5).astype(np.int32)
    lf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    with keras.GradientTape() as tape:
        tape.watch(x)
        loss = lf(y, model(x, training=True))
    g = tape.gradient(loss, {"weights": model.trainable_weights, "x": x})
    W = [torch.tensor(v.numpy(), requires_grad=True) for v in model.trainable_weights]
    X = torch.tensor(x, requires_grad=True)
    h = torch.nn.functional.conv2d(X.permute(0, 3, 1, 2), W[0].permute(3, 2, 0, 1), W[1])
    h = torch.nn.functional.max_pool2d(h.relu(), 2).permute(0, 2, 3, 1).reshape(5, -1)
    ref = torch.nn.functional.cross_entropy(h @ W[2] + W[3], torch.tensor(y).long())
    want = torch.autograd.grad(ref, W + [X])
    assert set(g) == {"weights", "x"}
    for k, (a, b) in enumerate(zip(g["weights"] + [g["x"]], want)):
        close(a, b, f"source {k}")


def test_several_targets_output_gradients_and_persistent():
    model, (x, y) = mlp(), data()
    with keras.GradientTape(persistent=True) as tape:
        pred = model(x)
        a = ops.mean(ops.square(pred - y))
        b = ops.sum(ops.abs(pred))
    both = tape.gradient([a, b], model.trainable_weights)
    seeded = tape.gradient(pred, model.trainable_weights[0],
                           output_gradients=np.full((5, 2), 0.5, np.float32))
    w, out = torch_mlp(model, x)
    ta = ((out - torch.tensor(y)) ** 2).mean()
    tb = out.abs().sum()
    for g, t in zip(both, torch.autograd.grad(ta + tb, w, retain_graph=True)):
        close(g, t)
    close(seeded, torch.autograd.grad((out * 0.5).sum(), w[0])[0])
    intermediate = tape.gradient(a, pred)  # an intermediate tensor as a source
    close(intermediate, 2 * (out - torch.tensor(y)) / 10)


def test_ops_on_variables_and_a_batch_input():
    r = np.random.default_rng(3)
    dense = layers.Dense(2)
    dense.build((None, 3))
    kernel = dense.kernel
    x = r.standard_normal((4, 3)).astype(np.float32)
    with keras.GradientTape() as tape:
        z = ops.matmul(x, kernel)
        loss = ops.mean(ops.exp(z) * 0.5)
    (g,) = tape.gradient(loss, [kernel])
    K = torch.tensor(kernel.numpy(), requires_grad=True)
    ref = (torch.exp(torch.tensor(x) @ K) * 0.5).mean()
    close(g, torch.autograd.grad(ref, K)[0])


def test_unconnected_none_and_zero():
    model, other = mlp(), mlp(5)
    x, y = data()
    with keras.GradientTape(persistent=True) as tape:
        loss = ops.mean(model(x))
    grads = tape.gradient(loss, model.trainable_weights + other.trainable_weights)
    assert all(g is not None for g in grads[:4]) and all(g is None for g in grads[4:])
    zeros = tape.gradient(loss, other.trainable_weights, unconnected_gradients="zero")
    assert all(z.shape == v.shape and not z.any()
               for z, v in zip(zeros, other.trainable_weights))
    assert tape.gradient(np.float32(1.0), model.trainable_weights) == [None] * 4
    assert tape.gradient(loss, y) is None  # never watched


def test_refusals_and_stop_recording():
    model, (x, _) = mlp(), data()
    with keras.GradientTape() as tape:
        loss = ops.sum(model(x))
        with tape.stop_recording():
            eager = ops.sum(model(x))
    assert isinstance(eager, np.ndarray)  # not recorded: a plain value
    np.testing.assert_allclose(eager, float(loss), rtol=1e-5)
    tape.gradient(loss, model.trainable_weights)
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        tape.gradient(loss, model.trainable_weights)
    with keras.GradientTape() as outer:
        with keras.GradientTape() as inner:
            inner.watch(x)
            pred = ops.sum(model(x))
        with pytest.raises(NotImplementedError, match="gradient of a gradient"):
            inner.gradient(pred, x)
    with pytest.raises(ValueError, match="unconnected_gradients"):
        outer.gradient(pred, x, unconnected_gradients="sometimes")


def test_training_loop_matches_torch_sgd_and_nodes_do_not_grow():
    model, (x, y) = mlp(), data(8)
    w = [torch.tensor(v.numpy(), requires_grad=True) for v in model.trainable_weights]
    opt = keras.optimizers.SGD(0.1)
    topt = torch.optim.SGD(w, lr=0.1)
    nodes = len(model._inbound_nodes)
    for _ in range(5):
        with keras.GradientTape() as tape:
            loss = ops.mean(ops.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        topt.zero_grad()
        tloss = ((torch.tanh(torch.tensor(x) @ w[0] + w[1]) @ w[2] + w[3]
                  - torch.tensor(y)) ** 2).mean()
        tloss.backward()
        topt.step()
        assert abs(float(loss) - tloss.item()) < 1e-5
    for v, t in zip(model.trainable_weights, w):
        close(v.numpy(), t)
    assert len(model._inbound_nodes) == nodes
    assert isinstance(model(x), np.ndarray)  # eager again outside the tape


def test_subclassed_model_built_inside_the_tape():
    """A call() model traced on its first call inside the tape keeps its own graph (only
    the tape's nodes are removed afterwards); Dropout/BatchNormalization in training."""

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d1 = layers.Dense(4, activation="tanh")
            self.d2 = layers.Dense(2)

        def call(self, x):
            return self.d2(self.d1(x))

    class Noisy(Net):
        def __init__(self):
            super().__init__()
            self.drop, self.bn = layers.Dropout(0.5, seed=1), layers.BatchNormalization()

        def call(self, x):
            return self.d2(self.bn(self.drop(self.d1(x))))

    x, y = data()
    net = Net()
    with keras.GradientTape() as tape:
        loss = ops.mean(ops.square(net(x, training=True) - y))
    grads = tape.gradient(loss, net.trainable_weights)
    w, out = torch_mlp(net, x)
    for g, t in zip(grads, torch.autograd.grad(((out - torch.tensor(y)) ** 2).mean(), w)):
        close(g, t)
    assert isinstance(net(x), np.ndarray) and net(x).shape == (5, 2)
    noisy, opt = Noisy(), keras.optimizers.SGD(0.1)
    for _ in range(2):
        with keras.GradientTape() as tape:
            loss = ops.mean(ops.square(noisy(x, training=True) - y))
        grads = tape.gradient(loss, noisy.trainable_weights)
        assert all(g is not None and np.all(np.isfinite(g)) for g in grads)
        opt.apply_gradients(zip(grads, noisy.trainable_weights))
    assert noisy(x).shape == (5, 2)


def test_repeated_step_replays_one_plan():
    from kerasish.tape import tape_run

    model, (x, y) = mlp(), data()
    runs = []
    for step in range(3):
        xs = x + step  # new arrays, the same structure
        with keras.GradientTape() as tape:
            loss = ops.mean(ops.square(model(xs, training=True) - y))
        grads = tape.gradient(loss, model.trainable_weights)
        runs.append(tape._rec.run)
        w, out = torch_mlp(model, xs)
        want = torch.autograd.grad(((out - torch.tensor(y)) ** 2).mean(), w)
        for g, t in zip(grads, want):
            close(g, t)
    assert runs[0] is runs[1] is runs[2] and runs[0] in tape_run._KEPT.values()
    with keras.GradientTape() as tape:  # another structure: planned anew
        loss = ops.sum(ops.square(model(x, training=True) - y))
    tape.gradient(loss, model.trainable_weights)
    assert tape._rec.run is not runs[0]


def test_a_tape_records_its_own_thread_only():
    import threading

    model, (x, y) = mlp(), data()
    seen = {}
    with keras.GradientTape() as tape:
        loss = ops.mean(model(x))
        worker = threading.Thread(target=lambda: seen.setdefault("out", model(x)))
        worker.start()
        worker.join()
    assert isinstance(seen["out"], np.ndarray) and seen["out"].shape == (5, 2)
    assert all(g is not None for g in tape.gradient(loss, model.trainable_weights))


def test_conv_discriminator_gan_losses_against_torch():
    """A DCGAN-style step's two tapes: a strided Conv2D/LeakyReLU discriminator on
    generated and real images (BCE from logits), then the generator's loss through it."""
    r = np.random.default_rng(7)
    disc = keras.Sequential([keras.Input((8, 8, 1)), layers.Conv2D(4, 3, strides=2),
                             layers.LeakyReLU(negative_slope=0.2), layers.Flatten(),
                             layers.Dense(1)])
    gen = keras.Sequential([keras.Input((3,)), layers.Dense(64, activation="tanh"),
                            layers.Reshape((8, 8, 1))])
    for m in (disc, gen):
        m.set_weights([(0.5 * r.standard_normal(w.shape)).astype(np.float32)
                       for w in m.get_weights()])
    z = r.standard_normal((4, 3)).astype(np.float32)
    real = r.standard_normal((4, 8, 8, 1)).astype(np.float32)
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    labels = np.concatenate([np.ones((4, 1)), np.zeros((4, 1))]).astype(np.float32)
    combined = np.concatenate([np.asarray(gen(z)), real])
    with keras.GradientTape() as tape:
        d_loss = bce(labels, disc(combined, training=True))
    d_grads = tape.gradient(d_loss, disc.trainable_weights)
    with keras.GradientTape() as tape:
        g_loss = bce(np.zeros((4, 1), np.float32), disc(gen(z, training=True), training=True))
    g_grads = tape.gradient(g_loss, gen.trainable_weights)

    D = [torch.tensor(v.numpy(), requires_grad=True) for v in disc.trainable_weights]
    G = [torch.tensor(v.numpy(), requires_grad=True) for v in gen.trainable_weights]

    def t_disc(images):
        h = torch.nn.functional.conv2d(images.permute(0, 3, 1, 2), D[0].permute(3, 2, 0, 1),
                                       D[1], stride=2)
        h = torch.nn.functional.leaky_relu(h, 0.2).permute(0, 2, 3, 1).reshape(len(images), -1)
        return h @ D[2] + D[3]

    def t_gen(latent):
        return torch.tanh(latent @ G[0] + G[1]).reshape(-1, 8, 8, 1)

    t_bce = torch.nn.functional.binary_cross_entropy_with_logits
    td = t_bce(t_disc(torch.tensor(combined)), torch.tensor(labels))
    for g, t in zip(d_grads, torch.autograd.grad(td, D)):
        close(g, t)
    tg = t_bce(t_disc(t_gen(torch.tensor(z))), torch.zeros(4, 1))
    for g, t in zip(g_grads, torch.autograd.grad(tg, G)):
        close(g, t)
    assert abs(float(d_loss) - td.item()) < 1e-5 and abs(float(g_loss) - tg.item()) < 1e-5
