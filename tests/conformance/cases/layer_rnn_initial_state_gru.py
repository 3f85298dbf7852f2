"""initial_state= as one tensor (GRU, SimpleRNN) and as a list; predictions and a train step."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(4)
seq = keras.Input(shape=(3, 2))
h0 = keras.Input(shape=(5,))
gru = layers.GRU(5, return_sequences=True)(seq, initial_state=h0)
rnn = layers.SimpleRNN(5)(gru, initial_state=[h0])
model = keras.Model([seq, h0], layers.Dense(1)(rnn))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
x = rng.standard_normal((6, 3, 2)).astype("float32")
s = rng.standard_normal((6, 5)).astype("float32")
y = rng.standard_normal((6, 1)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
before = model.predict([x, s], verbose=0)
loss = model.train_on_batch([x, s], y)

RESULT = {"predict": before, "loss": float(loss), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
