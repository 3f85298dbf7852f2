"""keras-io's masking guide: a CustomEmbedding whose compute_mask returns
ops.not_equal(inputs, 0), feeding an LSTM: refused by name on kerasish (a custom layer
computing a new mask)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops


class CustomEmbedding(layers.Layer):
    def __init__(self, input_dim, output_dim, mask_zero=False, **kwargs):
        super().__init__(**kwargs)
        self.input_dim, self.output_dim, self.mask_zero = input_dim, output_dim, mask_zero

    def build(self, input_shape):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer="random_normal", name="embeddings")

    def call(self, inputs):
        return ops.take(self.embeddings, ops.cast(inputs, "int32"), axis=0)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)


rng = np.random.default_rng(12)
inputs = keras.Input((5,), dtype="int32")
x = CustomEmbedding(8, 3, mask_zero=True)(inputs)
model = keras.Model(inputs, layers.LSTM(2)(x))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
tokens = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]], "int32")

RESULT = {"predict": model.predict(tokens, verbose=0)}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
