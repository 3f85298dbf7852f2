"""The RNN guide's encoder-decoder: the encoder's LSTM states as the decoder's initial_state."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(27)
enc_in = keras.Input(shape=(None,))
enc_emb = layers.Embedding(input_dim=30, output_dim=4)(enc_in)
output, state_h, state_c = layers.LSTM(5, return_state=True, name="encoder")(enc_emb)
dec_in = keras.Input(shape=(None,))
dec_emb = layers.Embedding(input_dim=20, output_dim=4)(dec_in)
dec_out = layers.LSTM(5, name="decoder")(dec_emb, initial_state=[state_h, state_c])
out = layers.Dense(3)(dec_out)
model = keras.Model([enc_in, dec_in], out)
model.set_weights([rng.normal(0, 0.4, w.shape).astype("float32") for w in model.get_weights()])
a = rng.integers(0, 30, (3, 4))
b = rng.integers(0, 20, (3, 2))
RESULT = {"pred": model.predict([a, b], verbose=0), "params": model.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
