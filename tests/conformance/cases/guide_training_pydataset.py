"""fit on a utils.PyDataset (batches by index) and on a Python generator with steps_per_epoch."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(82)
x = rng.normal(size=(12, 3)).astype("float32")
y = rng.normal(size=(12, 1)).astype("float32")


class Batches(keras.utils.PyDataset):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return x[i * 4:(i + 1) * 4], y[i * 4:(i + 1) * 4]


def gen():
    while True:
        for i in range(3):
            yield x[i * 4:(i + 1) * 4], y[i * 4:(i + 1) * 4]


out = {}
for name, data, kwargs in (("pydataset", Batches(), {}), ("generator", gen(), {"steps_per_epoch": 3})):
    model = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(1)])
    model.set_weights([np.full((3, 1), 0.2, "float32"), np.zeros(1, "float32")])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    hist = model.fit(data, epochs=2, verbose=0, shuffle=False, **kwargs)
    out[name] = [hist.history["loss"], model.get_weights()]
out["same"] = bool(np.allclose(out["pydataset"][1][0], out["generator"][1][0]))
RESULT = out
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
