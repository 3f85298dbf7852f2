"""LearningRateScheduler(schedule(epoch, lr)): the learning rate per epoch in the logs and weights."""

import numpy as np

import kerasish as keras
from kerasish import layers


def scheduler(epoch, lr):
    return lr if epoch < 1 else lr * 0.5


rng = np.random.default_rng(45)
x = rng.normal(size=(8, 2)).astype("float32")
y = rng.normal(size=(8, 1)).astype("float32")
model = keras.Sequential([keras.Input(shape=(2,)), layers.Dense(1)])
model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
model.compile(keras.optimizers.SGD(0.1), "mse")
hist = model.fit(x, y, epochs=4, batch_size=4, shuffle=False, verbose=0,
                 callbacks=[keras.callbacks.LearningRateScheduler(scheduler)])
RESULT = {"lr": hist.history["learning_rate"], "loss": hist.history["loss"],
          "final_lr": float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)), "weights": model.get_weights()}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
