"""Keras 3's step contract (train_step / test_step / predict_step overrides) against real
Keras 3 (torch backend), each side's step written for its backend as keras-io writes it
(kerasish: GradientTape; Keras: torch's backward): keras-io's CustomModel (compute_loss,
the metrics loop, fit/evaluate), a tiny GAN's losses over 20 steps (two optimizers, a
compile() override, Mean trackers as `metrics`), unpack_x_y_sample_weight, train_on_batch,
super().train_step and predict_step."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
torch = pytest.importorskip("torch")
real = pytest.importorskip("keras", reason="the comparison needs Keras 3")

import kerasish  # noqa: E402


def weights_for(model, seed):
    r = np.random.default_rng(seed)
    return [(0.5 * r.standard_normal(w.shape)).astype(np.float32) for w in model.get_weights()]


def custom_model_class(lib):
    if lib is kerasish:
        class CustomModel(lib.Model):
            def train_step(self, data):
                x, y = data
                with lib.GradientTape() as tape:
                    y_pred = self(x, training=True)
                    loss = self.compute_loss(y=y, y_pred=y_pred)
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply(grads, self.trainable_variables)
                for metric in self.metrics:
                    if metric.name == "loss":
                        metric.update_state(loss)
                    else:
                        metric.update_state(y, y_pred)
                return {m.name: m.result() for m in self.metrics}

            def test_step(self, data):
                x, y, _ = lib.utils.unpack_x_y_sample_weight(data)
                y_pred = self(x, training=False)
                loss = self.compute_loss(y=y, y_pred=y_pred)
                for metric in self.metrics:
                    if metric.name == "loss":
                        metric.update_state(loss)
                    else:
                        metric.update_state(y, y_pred)
                return {m.name: m.result() for m in self.metrics}
        return CustomModel

    class CustomModel(lib.Model):
        def train_step(self, data):
            x, y = data
            self.zero_grad()
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            loss.backward()
            variables = list(self.trainable_weights)
            with torch.no_grad():
                self.optimizer.apply([v.value.grad for v in variables], variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

        def test_step(self, data):
            x, y, _ = lib.utils.unpack_x_y_sample_weight(data)
            y_pred = self(x, training=False)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}
    return CustomModel


def run_custom_model(lib):
    cls = custom_model_class(lib)
    inputs = lib.Input(shape=(6,))
    hidden = lib.layers.Dense(8, activation="relu")(inputs)
    model = cls(inputs, lib.layers.Dense(1)(hidden))
    model.set_weights(weights_for(model, 0))
    model.compile(optimizer=lib.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    r = np.random.default_rng(1)
    x = r.standard_normal((40, 6)).astype(np.float32)
    y = r.standard_normal((40, 1)).astype(np.float32)
    history = model.fit(x, y, batch_size=10, epochs=3, shuffle=False, verbose=0)
    evaluated = model.evaluate(x, y, batch_size=10, verbose=0, return_dict=True)
    return history.history, evaluated, model.get_weights()


def test_custom_model_fit_and_evaluate_match_keras():
    ours, want = run_custom_model(kerasish), run_custom_model(real)
    assert sorted(ours[0]) == sorted(want[0]) == ["loss", "mae"]
    for key in want[0]:
        np.testing.assert_allclose(ours[0][key], want[0][key], rtol=1e-5, err_msg=key)
    assert sorted(ours[1]) == sorted(want[1])
    for key in want[1]:
        np.testing.assert_allclose(ours[1][key], want[1][key], rtol=1e-5, err_msg=key)
    for a, b in zip(ours[2], want[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


LATENT, BATCH, STEPS = 4, 8, 20


def gan_class(lib):
    class GAN(lib.Model):
        def __init__(self, discriminator, generator, latents):
            super().__init__()
            self.discriminator, self.generator = discriminator, generator
            self.latents, self.step_index = latents, 0

        def compile(self, d_optimizer, g_optimizer, loss_fn):
            super().compile()
            self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn
            self.d_loss_tracker = lib.metrics.Mean(name="d_loss")
            self.g_loss_tracker = lib.metrics.Mean(name="g_loss")

        @property
        def metrics(self):
            return [self.d_loss_tracker, self.g_loss_tracker]

        def latent_pair(self):
            k = self.step_index
            self.step_index += 1
            return self.latents[2 * k], self.latents[2 * k + 1]

        def train_step(self, real_images):
            if isinstance(real_images, tuple):
                real_images = real_images[0]
            n = real_images.shape[0]
            z1, z2 = self.latent_pair()
            generated = self.generator(z1)
            combined = lib.ops.concatenate([generated, real_images], axis=0)
            labels = lib.ops.concatenate([lib.ops.ones((n, 1)), lib.ops.zeros((n, 1))],
                                         axis=0)
            d_loss = self.step(self.discriminator, self.d_optimizer,
                               lambda: self.loss_fn(labels, self.discriminator(combined)))
            misleading = lib.ops.zeros((n, 1))
            g_loss = self.step(self.generator, self.g_optimizer,
                               lambda: self.loss_fn(misleading,
                                                    self.discriminator(self.generator(z2))))
            self.d_loss_tracker.update_state(d_loss)
            self.g_loss_tracker.update_state(g_loss)
            return {"d_loss": self.d_loss_tracker.result(),
                    "g_loss": self.g_loss_tracker.result()}

        if lib is kerasish:
            def step(self, trained, optimizer, loss_of):
                with lib.GradientTape() as tape:
                    loss = loss_of()
                grads = tape.gradient(loss, trained.trainable_weights)
                optimizer.apply_gradients(zip(grads, trained.trainable_weights))
                return loss
        else:
            def step(self, trained, optimizer, loss_of):
                self.zero_grad()
                loss = loss_of()
                loss.backward()
                variables = list(trained.trainable_weights)
                with torch.no_grad():
                    optimizer.apply([v.value.grad for v in variables], variables)
                return loss
    return GAN


def run_gan(lib):
    layers = lib.layers
    discriminator = lib.Sequential([lib.Input((6,)), layers.Dense(8),
                                    layers.LeakyReLU(negative_slope=0.2), layers.Dense(1)])
    generator = lib.Sequential([lib.Input((LATENT,)), layers.Dense(8, activation="relu"),
                                layers.Dense(6, activation="tanh")])
    discriminator.set_weights(weights_for(discriminator, 2))
    generator.set_weights(weights_for(generator, 3))
    r = np.random.default_rng(4)
    latents = r.standard_normal((2 * STEPS, BATCH, LATENT)).astype(np.float32)
    images = np.tanh(r.standard_normal((STEPS * BATCH, 6))).astype(np.float32)
    gan = gan_class(lib)(discriminator, generator, latents)
    gan.compile(d_optimizer=lib.optimizers.Adam(0.003), g_optimizer=lib.optimizers.Adam(0.003),
                loss_fn=lib.losses.BinaryCrossentropy(from_logits=True))
    gan.built = True  # no call(): Keras 3 would try to build it by calling it
    per_step = []
    record = lib.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: per_step.append((logs["d_loss"],
                                                                logs["g_loss"])))
    gan.fit(images, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[record])
    return np.array(per_step, np.float64), generator.get_weights()


def test_gan_losses_over_20_steps_match_keras():
    ours, ours_w = run_gan(kerasish)
    want, want_w = run_gan(real)
    assert ours.shape == want.shape == (STEPS, 2)
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-5)
    for a, b in zip(ours_w, want_w):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_default_steps_super_train_step_and_on_batch():
    class Passthrough(kerasish.Model):
        def train_step(self, data):
            logs = super().train_step(data)
            return {**logs, "extra": 1.0}

        def predict_step(self, data):
            return self(data) * 2.0

    inputs = kerasish.Input((3,))
    model = Passthrough(inputs, kerasish.layers.Dense(2)(inputs))
    plain = kerasish.Model(inputs, model.outputs)  # the same layers, the engine's steps
    model.compile(optimizer="sgd", loss="mse")
    r = np.random.default_rng(5)
    x = r.standard_normal((6, 3)).astype(np.float32)
    y = r.standard_normal((6, 2)).astype(np.float32)
    before = plain.predict(x, verbose=0)
    np.testing.assert_allclose(model.predict(x, verbose=0), 2 * before, rtol=1e-6)
    np.testing.assert_allclose(model.predict_on_batch(x), 2 * before, rtol=1e-6)
    logs = model.train_on_batch(x, y, return_dict=True)
    assert set(logs) == {"loss", "extra"}
    np.testing.assert_allclose(logs["loss"], np.mean((before - y) ** 2), rtol=1e-5)
    assert model.optimizer.iterations == 1
    x1, y1, w1 = kerasish.utils.unpack_x_y_sample_weight((x, y))
    assert x1 is x and y1 is y and w1 is None
    assert kerasish.utils.unpack_x_y_sample_weight(x)[0] is x


def test_metrics_reset_each_epoch_and_validation():
    class Tracked(kerasish.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.tracker = kerasish.metrics.Mean(name="my_loss")

        def train_step(self, data):
            x, y = data
            with kerasish.GradientTape() as tape:
                loss = kerasish.ops.mean(kerasish.ops.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self.tracker.update_state(loss)
            return {"my_loss": self.tracker.result(), "batch": loss}

        def test_step(self, data):
            x, y = data
            self.tracker.update_state(kerasish.ops.mean(kerasish.ops.square(self(x) - y)))
            return {"my_loss": self.tracker.result()}

    inputs = kerasish.Input((3,))
    model = Tracked(inputs, kerasish.layers.Dense(1)(inputs))
    model.compile(optimizer=kerasish.optimizers.SGD(0.05))
    assert [m.name for m in model.metrics] == ["loss", "my_loss"]
    r = np.random.default_rng(6)
    x = r.standard_normal((12, 3)).astype(np.float32)
    y = r.standard_normal((12, 1)).astype(np.float32)
    batches = []
    record = kerasish.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: batches.append(logs["batch"]))
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0,
                        callbacks=[record], validation_data=(x, y))
    assert len(batches) == 6
    np.testing.assert_allclose(history.history["my_loss"],
                               [np.mean(batches[:3]), np.mean(batches[3:])], rtol=1e-6)
    want = np.mean((model.predict(x, verbose=0) - y) ** 2)
    np.testing.assert_allclose(history.history["val_my_loss"][-1], want, rtol=1e-5)
    with pytest.raises(TypeError, match="expected a dict of logs"):
        class Bad(Tracked):
            def train_step(self, data):
                return 1.0
        bad = Bad(inputs, model.outputs)
        bad.compile(optimizer="sgd")
        bad.fit(x, y, verbose=0)
