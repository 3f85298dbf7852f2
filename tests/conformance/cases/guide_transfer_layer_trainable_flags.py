"""trainable flags: layer.trainable, recursive model.trainable, counts of (non-)trainable weights."""

import kerasish as keras
from kerasish import layers

inner = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2), layers.BatchNormalization()])
model = keras.Sequential([keras.Input(shape=(3,)), inner, layers.Dense(1)])
counts = []
counts.append([len(model.trainable_weights), len(model.non_trainable_weights)])
inner.layers[0].trainable = False
counts.append([len(model.trainable_weights), len(model.non_trainable_weights)])
model.trainable = False
counts.append([len(model.trainable_weights), len(model.non_trainable_weights),
               inner.layers[1].trainable])
model.trainable = True
counts.append([len(model.trainable_weights), inner.layers[0].trainable])
RESULT = {"counts": counts, "params": model.count_params()}
