"""Models are callable like layers: an encoder and a decoder composed into an autoencoder."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(4)
enc_in = keras.Input(shape=(8,), name="original")
code = layers.Dense(3, activation="relu")(enc_in)
encoder = keras.Model(enc_in, code, name="encoder")
dec_in = keras.Input(shape=(3,), name="encoded")
recon = layers.Dense(8)(dec_in)
decoder = keras.Model(dec_in, recon, name="decoder")
ae_in = keras.Input(shape=(8,))
autoencoder = keras.Model(ae_in, decoder(encoder(ae_in)), name="autoencoder")
autoencoder.set_weights([rng.normal(0, 0.5, w.shape).astype("float32")
                         for w in autoencoder.get_weights()])
x = rng.normal(size=(12, 8)).astype("float32")
autoencoder.compile(keras.optimizers.SGD(0.05), "mse")
hist = autoencoder.fit(x, x, batch_size=4, epochs=2, shuffle=False, verbose=0)
RESULT = {"loss": hist.history["loss"], "code": encoder.predict(x, verbose=0),
          "recon": autoencoder.predict(x, verbose=0),
          "names": [l.name for l in autoencoder.layers], "params": autoencoder.count_params(),
          "enc_params": encoder.count_params()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
