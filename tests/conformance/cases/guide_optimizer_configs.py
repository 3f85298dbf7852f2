"""Optimizers' get_config (Keras 3's keys and defaults) and from_config round trips."""

import kerasish as keras

out = {}
for cls in (keras.optimizers.SGD, keras.optimizers.Adam, keras.optimizers.AdamW,
            keras.optimizers.RMSprop, keras.optimizers.Adagrad, keras.optimizers.Nadam,
            keras.optimizers.Adamax, keras.optimizers.Adadelta, keras.optimizers.Lion,
            keras.optimizers.Ftrl):
    config = cls(learning_rate=0.02).get_config()
    out[cls.__name__] = {k: v for k, v in sorted(config.items())
                         if isinstance(v, (int, float, bool, str)) or v is None}
    again = cls.from_config(config).get_config()
    out[cls.__name__ + "_same"] = again == config
out["get"] = type(keras.optimizers.get("adam")).__name__
RESULT = out
