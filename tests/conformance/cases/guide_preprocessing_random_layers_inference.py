"""Random augmentation layers are the identity at inference; their output shapes in a model."""

import numpy as np

import kerasish as keras
from kerasish import layers

rng = np.random.default_rng(75)
img = rng.random((2, 8, 8, 3)).astype("float32")
augment = keras.Sequential([keras.Input(shape=(8, 8, 3)), layers.RandomFlip("horizontal"),
                            layers.RandomRotation(0.1), layers.RandomZoom(0.1),
                            layers.RandomTranslation(0.1, 0.1), layers.RandomContrast(0.2),
                            layers.RandomBrightness(0.1)])
crop = layers.RandomCrop(5, 6)
RESULT = {"identity": augment.predict(img, verbose=0),
          "shape": list(augment.output_shape),
          "crop_infer_shape": list(np.shape(keras.ops.convert_to_numpy(crop(img))))}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
