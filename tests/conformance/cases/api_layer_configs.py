"""Every supported layer's get_config() for the same constructor arguments, key by key
(tuples where Keras returns tuples), and the layer rebuilt from it (from_config) giving
the same config. Keys Keras has that kerasish does not support are listed in UNSUPPORTED
and left out on both sides."""

import kerasish as keras
from kerasish import layers


SPECS = {
    "Dense": lambda: layers.Dense(4, activation="relu", use_bias=False),
    "Conv1D": lambda: layers.Conv1D(4, 3, strides=2, padding="same", dilation_rate=1),
    "Conv2D": lambda: layers.Conv2D(4, (3, 2), strides=(2, 1), padding="same"),
    "Conv2D_int": lambda: layers.Conv2D(4, 3),
    "Conv2DTranspose": lambda: layers.Conv2DTranspose(4, 3, strides=2, padding="same"),
    "DepthwiseConv2D": lambda: layers.DepthwiseConv2D(3, strides=(1, 1), depth_multiplier=2),
    "SeparableConv2D": lambda: layers.SeparableConv2D(4, 3, padding="same"),
    "MaxPooling2D": lambda: layers.MaxPooling2D((2, 2)),
    "MaxPooling2D_int": lambda: layers.MaxPooling2D(3, strides=2, padding="same"),
    "AveragePooling2D": lambda: layers.AveragePooling2D(2),
    "MaxPooling1D": lambda: layers.MaxPooling1D(2),
    "AveragePooling1D": lambda: layers.AveragePooling1D(3, strides=1, padding="same"),
    "GlobalAveragePooling2D": lambda: layers.GlobalAveragePooling2D(),
    "GlobalMaxPooling2D": lambda: layers.GlobalMaxPooling2D(),
    "GlobalAveragePooling1D": lambda: layers.GlobalAveragePooling1D(),
    "GlobalMaxPooling1D": lambda: layers.GlobalMaxPooling1D(),
    "UpSampling2D": lambda: layers.UpSampling2D((2, 3)),
    "UpSampling2D_int": lambda: layers.UpSampling2D(2),
    "UpSampling1D": lambda: layers.UpSampling1D(3),
    "ZeroPadding2D": lambda: layers.ZeroPadding2D(((1, 2), (3, 4))),
    "ZeroPadding2D_int": lambda: layers.ZeroPadding2D(1),
    "Cropping2D": lambda: layers.Cropping2D(((1, 0), (2, 1))),
    "Cropping2D_int": lambda: layers.Cropping2D(1),
    "Reshape": lambda: layers.Reshape((2, 3)),
    "Reshape_list": lambda: layers.Reshape([3, -1]),
    "Permute": lambda: layers.Permute((2, 1)),
    "RepeatVector": lambda: layers.RepeatVector(3),
    "Flatten": lambda: layers.Flatten(),
    "Activation": lambda: layers.Activation("tanh"),
    "ReLU": lambda: layers.ReLU(max_value=6.0),
    "LeakyReLU": lambda: layers.LeakyReLU(negative_slope=0.1),
    "Softmax": lambda: layers.Softmax(axis=-1),
    "Dropout": lambda: layers.Dropout(0.3, noise_shape=(None, 1), seed=2),
    "SpatialDropout2D": lambda: layers.SpatialDropout2D(0.2),
    "GaussianNoise": lambda: layers.GaussianNoise(0.1),
    "GaussianDropout": lambda: layers.GaussianDropout(0.1),
    "BatchNormalization": lambda: layers.BatchNormalization(momentum=0.9),
    "LayerNormalization": lambda: layers.LayerNormalization(epsilon=1e-5),
    "Embedding": lambda: layers.Embedding(10, 4, mask_zero=True),
    "Masking": lambda: layers.Masking(0.0),
    "SimpleRNN": lambda: layers.SimpleRNN(3, return_sequences=True),
    "LSTM": lambda: layers.LSTM(3),
    "GRU": lambda: layers.GRU(3, reset_after=False),
    "Bidirectional": lambda: layers.Bidirectional(layers.LSTM(2)),
    "TimeDistributed": lambda: layers.TimeDistributed(layers.Dense(2)),
    "Add": lambda: layers.Add(),
    "Subtract": lambda: layers.Subtract(),
    "Multiply": lambda: layers.Multiply(),
    "Average": lambda: layers.Average(),
    "Maximum": lambda: layers.Maximum(),
    "Minimum": lambda: layers.Minimum(),
    "Concatenate": lambda: layers.Concatenate(axis=1),
    "Attention": lambda: layers.Attention(use_scale=True),
    "AdditiveAttention": lambda: layers.AdditiveAttention(),
    "MultiHeadAttention": lambda: layers.MultiHeadAttention(2, 4),
    "Identity": lambda: layers.Identity(),
    "Rescaling": lambda: layers.Rescaling(1.0 / 255, offset=0.5),
    "Resizing": lambda: layers.Resizing(8, 6),
    "CenterCrop": lambda: layers.CenterCrop(4, 4),
    "Normalization": lambda: layers.Normalization(axis=-1),
    "RandomFlip": lambda: layers.RandomFlip("horizontal", seed=1),
    "RandomRotation": lambda: layers.RandomRotation(0.1, seed=1),
    "RandomZoom": lambda: layers.RandomZoom(0.2, seed=1),
    "RandomTranslation": lambda: layers.RandomTranslation(0.1, 0.2, seed=1),
    "RandomCrop": lambda: layers.RandomCrop(4, 4, seed=1),
    "RandomBrightness": lambda: layers.RandomBrightness(0.2, seed=1),
    "RandomContrast": lambda: layers.RandomContrast(0.2, seed=1),
}
# Keras keys kerasish does not support (features out of reach); left out on both sides.
UNSUPPORTED = {"lora_rank", "lora_alpha", "quantization_config"}


def _plain(value):
    """Nested configs as plain values; tuples stay tuples (the point of this case)."""
    if isinstance(value, dict) and value.get("class_name") == "DTypePolicy":
        return value["config"]["name"]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in UNSUPPORTED}
    if isinstance(value, tuple):
        return ("__tuple__", *[_plain(v) for v in value])
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


RESULT = {}
for key, make in SPECS.items():
    layer = make()
    config = layer.get_config()
    config.pop("name", None)
    rebuilt = type(layer).from_config(layer.get_config()).get_config()
    rebuilt.pop("name", None)
    RESULT[key] = {"config": _plain(config), "round_trip": _plain(rebuilt) == _plain(config)}
