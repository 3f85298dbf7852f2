"""keras.applications.MobileNetV2(weights=None): parameter count and layer names, tiny input."""

import kerasish as keras

model = keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, classes=5)
RESULT = {"params": model.count_params(), "n_layers": len(model.layers),
          "first": [l.name for l in model.layers[:6]], "last": [l.name for l in model.layers[-4:]],
          "output_shape": list(model.output_shape)}
