"""callbacks.TensorBoard constructs without its optional writer package (here hidden:
`tensorboard` on kerasish, TensorFlow on Keras's torch backend) and fails only at the
first write, with an ImportError."""

import os
import sys

import numpy as np

import kerasish as keras

sys.modules["tensorboard"] = None  # the optional package is absent
sys.modules["tensorflow"] = None
tb = keras.callbacks.TensorBoard(log_dir=os.path.join(WORKDIR, "logs"), histogram_freq=1)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
try:
    model.fit(np.zeros((8, 3), "float32"), np.zeros((8, 1), "float32"), epochs=1, verbose=0,
              callbacks=[tb])
    failed_with = None
except ImportError:
    failed_with = "ImportError"
del sys.modules["tensorboard"], sys.modules["tensorflow"]

RESULT = {
    "constructed": type(tb).__name__,
    "log_dir": os.path.basename(tb.log_dir),
    "histogram_freq": tb.histogram_freq,
    "fit": failed_with,
}
