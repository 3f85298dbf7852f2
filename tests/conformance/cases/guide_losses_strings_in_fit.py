"""compile(loss=<Keras's string>) for each listed string: one epoch's loss and the weights."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(52)
x = rng.normal(size=(8, 3)).astype("float32")
y = rng.random((8, 2)).astype("float32") * 0.8 + 0.1
out = {}
for loss in ("mse", "mae", "mape", "msle", "kld", "huber", "log_cosh", "poisson",
             "binary_crossentropy", "categorical_crossentropy", "hinge", "squared_hinge",
             "cosine_similarity", "mean_squared_error", "categorical_hinge"):
    model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2, activation="sigmoid")])
    model.set_weights([np.full((3, 2), 0.3, "float32"), np.zeros(2, "float32")])
    model.compile(keras.optimizers.SGD(0.1), loss)
    hist = model.fit(x, y, epochs=1, batch_size=4, shuffle=False, verbose=0)
    out[loss] = [hist.history["loss"][0], model.get_weights()[0]]
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
