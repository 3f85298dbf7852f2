"""ops.image.resize and ops.image.extract_patches: eager on arrays (batched and one image)
and traced inside a custom layer's call(), trained by fit (gradients through both)."""

import numpy as np

import kerasish as keras
from kerasish import layers, ops

rng = np.random.default_rng(4)
images = rng.standard_normal((2, 6, 8, 3)).astype("float32")
RESULT = {
    "resize_down": ops.convert_to_numpy(ops.image.resize(images, (3, 5))),
    "resize_up": ops.convert_to_numpy(ops.image.resize(images, (9, 12))),
    "resize_nearest": ops.convert_to_numpy(ops.image.resize(images, (4, 11),
                                                            interpolation="nearest")),
    "resize_one": ops.convert_to_numpy(ops.image.resize(images[0], (5, 5))),
    "patches": ops.convert_to_numpy(ops.image.extract_patches(images, 2)),
    "patches_strided": ops.convert_to_numpy(ops.image.extract_patches(images, (3, 2),
                                                                      strides=(2, 3))),
    "patches_same": ops.convert_to_numpy(ops.image.extract_patches(images, 3, strides=1,
                                                                   padding="same")),
    "patches_dilated": ops.convert_to_numpy(ops.image.extract_patches(images, 2, strides=1,
                                                                      dilation_rate=2)),
}


class Patches(layers.Layer):
    """keras-io's ViT patch layer, with a resize in front."""

    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def call(self, images):
        images = ops.image.resize(images, (8, 8))
        patches = ops.image.extract_patches(images, size=self.patch_size)
        return ops.reshape(patches, (-1, 16, self.patch_size * self.patch_size * 3))


inputs = keras.Input((6, 8, 3))
x = Patches(2)(inputs)
x = layers.Dense(4)(x)
outputs = layers.Dense(1)(layers.Flatten()(x))
model = keras.Model(inputs, outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.2
                   for w in model.get_weights()])
model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
y = rng.standard_normal((2, 1)).astype("float32")
RESULT["model_predict"] = model.predict(images, verbose=0)
RESULT["model_loss"] = model.fit(images, y, epochs=2, batch_size=2, verbose=0).history["loss"]
RESULT["model_weights"] = model.get_weights()
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
