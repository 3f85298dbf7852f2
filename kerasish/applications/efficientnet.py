"""EfficientNetB0-B7 (Tan & Le, 2019), laid out as Keras 3's
keras.applications.EfficientNetB0: same layer names, order and weights (the stem's
Normalization holds mean/variance/count, as Keras's, filled from the ImageNet file).

The squeeze-excite Multiply broadcasts (B, 1, 1, C) over the map, stochastic depth is
Dropout with noise_shape=(None, 1, 1, 1), and the ImageNet stem's Rescaling is per
channel: all kerasish.layers, so saved .keras files name Keras's own classes."""

import copy
import math

from kerasish import layers
from kerasish.applications import imagenet_utils as iu

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/keras-applications/"
WEIGHTS_HASHES = {  # (with top, without top)
    "b0": ("902e53a9f72be733fc0bcb005b3ebbac", "50bc09e76180e00e4465e1a485ddc09d"),
    "b1": ("1d254153d4ab51201f1646940f018540", "74c4e6b3e1f6a1eea24c589628592432"),
    "b2": ("b15cce36ff4dcbd00b6dd88e7857a6ad", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "b3": ("ffd1fdc53d0ce67064dc6a9c7960ede0", "af6d107764bb5b1abb91932881670226"),
}
# kernel_size, repeats, filters_in, filters_out, expand_ratio, strides (all id_skip,
# se_ratio 0.25).
_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2),
           (3, 3, 40, 80, 6, 2), (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2),
           (3, 1, 192, 320, 6, 1))
DEFAULT_BLOCKS_ARGS = [
    {"kernel_size": k, "repeats": r, "filters_in": fi, "filters_out": fo,
     "expand_ratio": e, "id_skip": True, "strides": s, "se_ratio": 0.25}
    for k, r, fi, fo, e, s in _STAGES]
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling", "config": {
    "scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]


def _conv(filters, kernel, name, **kwargs):
    return layers.Conv2D(filters, kernel, padding="same", use_bias=False,
                         kernel_initializer=CONV_KERNEL_INITIALIZER, name=name, **kwargs)


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32,
          filters_out=16, kernel_size=3, strides=1, expand_ratio=1, se_ratio=0.0,
          id_skip=True):
    """Inverted residual (MBConv) block with squeeze-excite and stochastic depth."""
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = _conv(filters, 1, f"{name}expand_conv")(x)
        x = layers.BatchNormalization(axis=3, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    if strides == 2:
        x = layers.ZeroPadding2D(padding=iu.correct_pad(x, kernel_size),
                                 name=f"{name}dwconv_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=strides,
                               padding="valid" if strides == 2 else "same", use_bias=False,
                               depthwise_initializer=CONV_KERNEL_INITIALIZER,
                               name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
        se = layers.Reshape((1, 1, filters), name=f"{name}se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=f"{name}se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                           kernel_initializer=CONV_KERNEL_INITIALIZER,
                           name=f"{name}se_expand")(se)
        x = layers.Multiply(name=f"{name}se_excite")([x, se])
    x = _conv(filters_out, 1, f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=3, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1),
                               name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2,
                 drop_connect_rate=0.2, depth_divisor=8, activation="swish",
                 blocks_args="default", name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                 classes=1000, classifier_activation="softmax", weights_name=None):
    """Keras's EfficientNet builder: widths and depths scaled from the B0 stages."""
    blocks_args = DEFAULT_BLOCKS_ARGS if blocks_args == "default" else blocks_args
    model = f"EfficientNet{weights_name.upper()}" if weights_name else name
    iu.check_weights(model, weights, include_top, classes)
    iu.check_pooling(model, pooling)
    if weights == "imagenet" and weights_name not in WEIGHTS_HASHES:
        raise ValueError(f"{model}: kerasish knows no ImageNet weights for "
                         f"weights_name={weights_name!r}; pass weights=None or a file path")
    input_shape = iu.obtain_input_shape(input_shape, default_size, min_size=32,
                                        require_flatten=include_top, weights=weights)
    img_input = iu.image_input(model, input_tensor, input_shape, default_size)

    def round_filters(filters, divisor=depth_divisor):
        filters *= width_coefficient
        new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
        return int(new_filters + divisor if new_filters < 0.9 * filters else new_filters)

    def round_repeats(repeats):
        return int(math.ceil(depth_coefficient * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    if weights == "imagenet":
        # Keras's own stem (1/sqrt(std), as it ships): the ImageNet weights expect it.
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=iu.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    blocks = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError("The number of repeats in `EfficientNet` must be > 0. "
                             f"Received: repeats={args['repeats']}")
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / blocks,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1

    x = _conv(round_filters(1280), 1, "top_conv")(x)
    x = layers.BatchNormalization(axis=3, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        iu.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=DENSE_KERNEL_INITIALIZER, name="predictions")(x)
    else:
        x = iu.pooled(x, pooling, "avg_pool", "max_pool")
    net = iu.functional(img_input, input_tensor, x, name)
    if weights != "imagenet":
        return iu.load_weights(net, model, weights, None, None)
    fname = name + (".h5" if include_top else "_notop.h5")
    return iu.load_weights(net, model, weights, fname, BASE_WEIGHTS_PATH + fname,
                           WEIGHTS_HASHES[weights_name][0 if include_top else 1])


def _variant(width, depth, size, dropout, default_name, weights_name):
    def build(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax",
              name=default_name):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top,
                            weights=weights, input_tensor=input_tensor,
                            input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation,
                            weights_name=weights_name)

    build.__name__ = build.__qualname__ = f"EfficientNet{weights_name.upper()}"
    build.__doc__ = (f"{build.__name__} with Keras 3's arguments (input at least 32x32; "
                     f"default {size}x{size}x3). Expects pixels in [0, 255]: the model "
                     f"rescales and normalizes them itself.")
    return build


EfficientNetB0 = _variant(1.0, 1.0, 224, 0.2, "efficientnetb0", "b0")
EfficientNetB1 = _variant(1.0, 1.1, 240, 0.2, "efficientnetb1", "b1")
EfficientNetB2 = _variant(1.1, 1.2, 260, 0.3, "efficientnetb2", "b2")
EfficientNetB3 = _variant(1.2, 1.4, 300, 0.3, "efficientnetb3", "b3")


def preprocess_input(x, data_format=None):
    """The identity: EfficientNet models take [0, 255] pixels (Keras's placeholder)."""
    return x


def decode_predictions(preds, top=5):
    return iu.decode_predictions(preds, top=top)
