"""keras-io's text-classification TransformerBlock, tiny: MHA + FFN + LayerNorm residuals, fit."""

import numpy as np

import kerasish as keras
from kerasish import layers


class TransformerBlock(layers.Layer):
    def __init__(self, embed_dim, num_heads, ff_dim):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)

    def call(self, inputs):
        out1 = self.layernorm1(inputs + self.att(inputs, inputs))
        return self.layernorm2(out1 + self.ffn(out1))


rng = np.random.default_rng(40)
inputs = layers.Input(shape=(5,))
x = layers.Embedding(30, 4)(inputs)
x = TransformerBlock(4, 2, 6)(x)
x = layers.GlobalAveragePooling1D()(x)
outputs = layers.Dense(2, activation="softmax")(x)
model = keras.Model(inputs=inputs, outputs=outputs)
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
x_data = rng.integers(0, 30, (6, 5))
y = rng.integers(0, 2, 6)
model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
hist = model.fit(x_data, y, batch_size=3, epochs=2, shuffle=False, verbose=0)
RESULT = {"hist": hist.history, "pred": model.predict(x_data, verbose=0),
          "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
