"""A VAE step through the GradientTape (keras-io's VAE with the sampling noise drawn by
NumPy and given to the tape as an array; keras.random lives on another branch): encoder
with z_mean / z_log_var heads, the reparameterized z, a sigmoid decoder, reconstruction
cross-entropy + KL divergence; every gradient (encoder and decoder) against PyTorch
autograd (1e-5), then three SGD steps against torch.optim.SGD."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kerasish as keras  # noqa: E402
from kerasish import layers, ops  # noqa: E402

EPS = 1e-6


def build(seed=0):
    r = np.random.default_rng(seed)
    inputs = keras.Input((6,))
    h = layers.Dense(8, activation="relu")(inputs)
    encoder = keras.Model(inputs, [layers.Dense(2)(h), layers.Dense(2)(h)])
    decoder = keras.Sequential([keras.Input((2,)), layers.Dense(8, activation="relu"),
                                layers.Dense(6, activation="sigmoid")])
    for m in (encoder, decoder):
        m.set_weights([(0.5 * r.standard_normal(w.shape)).astype(np.float32)
                       for w in m.get_weights()])
    return encoder, decoder


def vae_loss(encoder, decoder, data, noise):
    z_mean, z_log_var = encoder(data, training=True)
    z = z_mean + ops.exp(0.5 * z_log_var) * noise  # the sampling layer's formula
    recon = decoder(z, training=True)
    bce = -(data * ops.log(recon + EPS) + (1.0 - data) * ops.log(1.0 - recon + EPS))
    reconstruction = ops.mean(ops.sum(bce, axis=1))
    kl = -0.5 * (1.0 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
    return reconstruction + ops.mean(ops.sum(kl, axis=1))


def torch_loss(params, data, noise):
    e0, e1, m0, m1, v0, v1, d0, d1, d2, d3 = params
    h = torch.relu(data @ e0 + e1)
    z_mean, z_log_var = h @ m0 + m1, h @ v0 + v1
    z = z_mean + torch.exp(0.5 * z_log_var) * noise
    recon = torch.sigmoid(torch.relu(z @ d0 + d1) @ d2 + d3)
    bce = -(data * torch.log(recon + EPS) + (1 - data) * torch.log(1 - recon + EPS))
    kl = -0.5 * (1 + z_log_var - z_mean ** 2 - torch.exp(z_log_var))
    return bce.sum(1).mean() + kl.sum(1).mean()


def test_vae_gradients_and_steps_match_torch():
    encoder, decoder = build()
    variables = encoder.trainable_weights + decoder.trainable_weights
    params = [torch.tensor(v.numpy(), requires_grad=True) for v in variables]
    r = np.random.default_rng(1)
    data = r.random((7, 6)).astype(np.float32)
    noise = r.standard_normal((7, 2)).astype(np.float32)
    with keras.GradientTape() as tape:
        loss = vae_loss(encoder, decoder, data, noise)
    grads = tape.gradient(loss, {"weights": variables})
    ref = torch_loss(params, torch.tensor(data), torch.tensor(noise))
    want = torch.autograd.grad(ref, params)
    assert abs(float(loss) - ref.item()) < 1e-5 * max(1.0, abs(ref.item()))
    for k, (g, t) in enumerate(zip(grads["weights"], want)):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"grad {k}")

    opt = keras.optimizers.SGD(0.05)  # (Keras's Adam puts epsilon elsewhere than torch's)
    topt = torch.optim.SGD(params, lr=0.05)
    for step in range(3):
        noise = r.standard_normal((7, 2)).astype(np.float32)
        with keras.GradientTape() as tape:
            loss = vae_loss(encoder, decoder, data, noise)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        topt.zero_grad()
        torch_loss(params, torch.tensor(data), torch.tensor(noise)).backward()
        topt.step()
    for v, p in zip(variables, params):
        np.testing.assert_allclose(v.numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)
