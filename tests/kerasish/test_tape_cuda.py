"""The CUDA path (under the simulator) of a GradientTape step, apply_gradients and a
train_step override, replayed: each matches the CPU run (tiny shapes)."""

import numpy as np
import pytest

from kerasish import config

pytestmark = pytest.mark.cudasim


def _needs_cuda():
    from kernels_numba import cuda_available

    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")


def _run(device):
    import kerasish as keras
    from kerasish import layers, ops
    from kerasish.tape import tape_run

    config.set_device(device)
    try:
        model = keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="relu"),
                                  layers.Dense(2)])
        r = np.random.default_rng(0)
        model.set_weights([r.standard_normal(w.shape).astype(np.float32)
                           for w in model.get_weights()])
        assert model.device == device
        x = r.standard_normal((5, 3)).astype(np.float32)
        y = r.integers(0, 2, 5).astype(np.int32)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        opt = keras.optimizers.Adam(0.05)
        losses, kept = [], []
        for _ in range(2):  # the second step replays the first one's plan
            with keras.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True)) + ops.mean(
                    ops.square(model.trainable_weights[0]))
            grads = tape.gradient(loss, model.trainable_weights)
            opt.apply_gradients(zip(grads, model.trainable_weights))
            losses.append(float(loss))
            kept.append(tape._rec.run)
        assert kept[0] is kept[1] and kept[0] in tape_run._KEPT.values()

        class Stepped(keras.Model):
            def train_step(self, data):
                xb, yb = data
                with keras.GradientTape() as tape:
                    loss = self.compute_loss(y=yb, y_pred=self(xb, training=True))
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                return {"loss": loss}

        inputs = keras.Input((3,))
        stepped = Stepped(inputs, model(inputs))
        stepped.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss_fn)
        history = stepped.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0)
        return losses, grads, history.history["loss"], model.get_weights()
    finally:
        config.set_device("cpu")


def test_tape_apply_gradients_and_train_step_on_cuda_match_cpu():
    _needs_cuda()
    cpu, gpu = _run("cpu"), _run("cuda")
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-5)
    for a, b in zip(gpu[1], cpu[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gpu[2], cpu[2], rtol=1e-5)
    for a, b in zip(gpu[3], cpu[3]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
