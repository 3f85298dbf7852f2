"""Dot-product Attention against real Keras 3 (outputs, training, gradients), and
keras-io's Transformer text-classification example with only the import changed."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")

import kerasish  # noqa: E402
from kerasish.layers.attention import MultiHeadAttention  # noqa: E402, F401
from tests.kerasish.test_attention_layers import TOL, _fd_check_first_kernel  # noqa: E402


def test_keras_io_transformer_text_classification(monkeypatch):
    """keras-io's "Text classification with Transformer" (synthetic token ids), with
    only `import kerasish as keras` changed; a few steps of fit lower the loss."""
    if not hasattr(kerasish.layers, "MultiHeadAttention"):  # until the lead exports it
        monkeypatch.setattr(kerasish.layers, "MultiHeadAttention", MultiHeadAttention,
                            raising=False)
    keras = kerasish
    from kerasish import layers, ops

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential(
                [layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    vocab_size, maxlen = 200, 20
    rng = np.random.default_rng(0)
    x_train = rng.integers(0, vocab_size, (64, maxlen))
    y_train = (x_train[:, :5].sum(axis=1) % 2).astype(np.int32)  # learnable from tokens

    embed_dim, num_heads, ff_dim = 32, 2, 32
    keras.utils.set_random_seed(1)
    inputs = layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
    x = transformer_block(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=4,
                        validation_data=(x_train[:16], y_train[:16]), verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses
    assert model.predict(x_train[:3], verbose=0).shape == (3, 2)


@pytest.mark.parametrize("with_key", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_dot_attention_equals_keras_and_trains(with_key, causal):
    from kerasish.layers.attention import Attention

    rng = np.random.default_rng(8)
    q = rng.normal(size=(2, 4, 3)).astype(np.float32)
    v = rng.normal(size=(2, 6, 3)).astype(np.float32)
    k = rng.normal(size=(2, 6, 3)).astype(np.float32)
    x = [q, v, k] if with_key else [q, v]
    outs = []
    for lib, cls in ((real, real.layers.Attention), (kerasish, Attention)):
        ins = [lib.Input(a.shape[1:]) for a in x]
        model = lib.Model(ins, cls()(ins, use_causal_mask=causal))
        outs.append(model)
    want = real.ops.convert_to_numpy(outs[0](x))
    np.testing.assert_allclose(outs[1].predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    # gradients reach the inputs: a Dense in front of every input learns
    ins = [kerasish.Input(a.shape[1:]) for a in x]
    pre = [kerasish.layers.Dense(3)(t) for t in ins]
    model = kerasish.Model(ins, Attention()(pre, use_causal_mask=causal))
    model.compile(kerasish.optimizers.SGD(0.1), "mse")
    target = rng.normal(size=(2, 4, 3)).astype(np.float32)
    losses = [model.train_on_batch(x, target) for _ in range(5)]
    assert losses[-1] < losses[0], losses


def test_dot_attention_self_gradient():
    """Attention()([h, h]): the query, key and value paths all reach the Dense."""
    from kerasish.layers.attention import Attention

    kerasish.utils.set_random_seed(4)
    xi = kerasish.Input((4, 3))
    h = kerasish.layers.Dense(3)(xi)
    model = kerasish.Model(xi, Attention()([h, h]))
    rng = np.random.default_rng(9)
    _fd_check_first_kernel(model, rng.normal(size=(2, 4, 3)).astype(np.float32),
                           rng.normal(size=(2, 4, 3)).astype(np.float32), stride=1)
