"""Sequential and functional get_config/from_config: layer classes, names and equal predictions."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(58)
seq = keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3, activation="relu", name="d1"),
                        layers.Dropout(0.2), layers.Dense(2, name="d2")], name="seq")
seq.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in seq.get_weights()])
inp = keras.Input(shape=(4,), name="in")
fun = keras.Model(inp, layers.Dense(2, name="out")(layers.Dense(3, name="hid")(inp)), name="fun")
fun.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in fun.get_weights()])
x = rng.normal(size=(3, 4)).astype("float32")
seq_config, fun_config = seq.get_config(), fun.get_config()
summary = {"seq_layers": [l["class_name"] for l in seq_config["layers"]],
           "seq_name": seq_config["name"], "fun_keys": sorted(fun_config),
           "fun_inputs": fun_config["input_layers"], "fun_outputs": fun_config["output_layers"]}
seq2 = keras.Sequential.from_config(seq_config)
seq2.set_weights(seq.get_weights())
fun2 = keras.Model.from_config(fun_config)
fun2.set_weights(fun.get_weights())
dense = layers.Dense(5, activation="tanh", use_bias=False, name="d")
dense_config = dense.get_config()
RESULT = {**summary, "seq": seq2.predict(x, verbose=0), "fun": fun2.predict(x, verbose=0),
          "names": [l.name for l in fun2.layers],
          "dense": {k: dense_config[k] for k in ("units", "activation", "use_bias", "name", "trainable")},
          "dense_again": layers.Dense.from_config(dense_config).get_config() == dense_config}
