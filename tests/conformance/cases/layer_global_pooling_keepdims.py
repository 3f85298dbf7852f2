"""Global pooling with keepdims=True (the pooled axes kept as size 1), also channels_first
and behind a mask, in a trained model: shapes, predictions, a training step, configs."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(23)
image = keras.Input((5, 4, 3))
a = layers.GlobalAveragePooling2D(keepdims=True)(layers.Conv2D(4, 2)(image))
b = layers.GlobalMaxPooling2D(keepdims=True)(image)
c = layers.GlobalAveragePooling2D(data_format="channels_first", keepdims=True)(image)
merged = layers.Concatenate()([layers.Flatten()(a), layers.Flatten()(b), layers.Flatten()(c)])
tokens = keras.Input((6,), dtype="int32")
seq = layers.Embedding(9, 3, mask_zero=True)(tokens)
d = layers.GlobalAveragePooling1D(keepdims=True)(seq)
e = layers.GlobalMaxPooling1D(keepdims=True)(seq)
merged = layers.Concatenate()([merged, layers.Flatten()(d), layers.Flatten()(e)])
model = keras.Model([image, tokens], layers.Dense(2)(merged))
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.5
                   for w in model.get_weights()])
x = rng.standard_normal((4, 5, 4, 3)).astype("float32")
ids = rng.integers(0, 9, size=(4, 6)).astype("int32")
ids[:2, 3:] = 0
y = rng.standard_normal((4, 2)).astype("float32")
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
before = model.predict([x, ids], verbose=0)
loss = model.train_on_batch([x, ids], y)

RESULT = {"shapes": [list(t.shape) for t in (a, b, c, d, e)], "predict": before,
          "loss": float(loss), "weights": model.get_weights(),
          "keepdims": [layer.get_config().get("keepdims") for layer in model.layers
                       if "pooling" in layer.name]}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
