"""Integer and bool Inputs: int64 ids to Embedding, uint8 ids, and each dtype as reported
by model.inputs and the InputLayer config."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(2)
table = rng.standard_normal((16, 3)).astype("float32")
result = {}
for dtype in ("int32", "int64", "uint8"):
    inputs = keras.Input(shape=(5,), dtype=dtype)
    embedding = layers.Embedding(16, 3)
    model = keras.Model(inputs, layers.Flatten()(embedding(inputs)))
    embedding.set_weights([table])
    ids = rng.integers(0, 16, size=(3, 5)).astype(dtype)
    result[dtype] = {"dtype": str(model.inputs[0].dtype), "predict": model.predict(ids, verbose=0),
                     "config": model.get_layer(index=0).get_config()["dtype"]}
flag = keras.Input(shape=(4,), dtype="bool")
result["bool"] = str(flag.dtype)

RESULT = result
