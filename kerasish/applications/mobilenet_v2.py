"""MobileNetV2 (Sandler et al., 2018), laid out as Keras 3's
keras.applications.MobileNetV2: same layer names, order and weights, so Keras's
ImageNet files and models saved on either side load here."""

import warnings

from kerasish import layers
from kerasish.applications import imagenet_utils as iu

BASE_WEIGHT_PATH = ("https://storage.googleapis.com/tensorflow/"
                    "keras-applications/mobilenet_v2/")
_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)
_SIZES = (96, 128, 160, 192, 224)
# (filters, stride, expansion) of the 17 inverted residual blocks, in order.
_BLOCKS = ([(16, 1, 1)] + [(24, 2, 6), (24, 1, 6)] + [(32, 2, 6)] + [(32, 1, 6)] * 2 +
           [(64, 2, 6)] + [(64, 1, 6)] * 3 + [(96, 1, 6)] * 3 + [(160, 2, 6)] +
           [(160, 1, 6)] * 2 + [(320, 1, 6)])


def _make_divisible(v, divisor, min_value=None):
    """Round channel counts to a multiple of `divisor`, never below 90% of v."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _bn(name):
    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, 1, padding="same", use_bias=False,
                          name=f"{prefix}expand")(x)
        x = _bn(f"{prefix}expand_BN")(x)
        x = layers.ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=iu.correct_pad(x, 3), name=f"{prefix}pad")(x)
    x = layers.DepthwiseConv2D(3, strides=stride, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=f"{prefix}depthwise")(x)
    x = _bn(f"{prefix}depthwise_BN")(x)
    x = layers.ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, 1, padding="same", use_bias=False,
                      name=f"{prefix}project")(x)
    x = _bn(f"{prefix}project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=f"{prefix}add")([inputs, x])
    return x


def _default_size(input_shape, input_tensor):
    """The ImageNet resolution the input matches (Keras's rule), else 224."""
    shape = input_shape if input_shape is not None else (
        input_tensor.shape[1:] if input_tensor is not None else None)
    if shape is None:
        return 224
    rows, cols = shape[0], shape[1]
    return rows if rows == cols and rows in _SIZES else 224


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet",
                input_tensor=None, pooling=None, classes=1000,
                classifier_activation="softmax", name=None):
    """MobileNetV2 with Keras 3's arguments.

    Args:
        input_shape: (H, W, 3), H and W >= 32; default (224, 224, 3) with the top.
        alpha: width multiplier (ImageNet weights exist for 0.35, 0.5, 0.75, 1.0, 1.3,
            1.4).
        include_top: the global-average-pool + Dense classifier.
        weights: None (random), "imagenet" (downloaded) or a path to a weights file.
        input_tensor: a symbolic tensor to build on.
        pooling: with include_top=False: None (4D output), "avg" or "max".
        classes: classifier width (1000 with ImageNet weights).
        classifier_activation: the top's activation (None or "softmax" with weights).
        name: default "mobilenetv2_{alpha:.2f}_{rows}".
    """
    model = "MobileNetV2"
    iu.check_weights(model, weights, include_top, classes)
    iu.check_pooling(model, pooling)
    if input_shape is not None and input_tensor is not None and \
            tuple(input_tensor.shape[1:]) != tuple(input_shape):
        raise ValueError(f"{model}: input_tensor.shape[1:] must equal input_shape; received "
                         f"input_tensor.shape={input_tensor.shape}, "
                         f"input_shape={input_shape}")
    default_size = _default_size(input_shape, input_tensor)
    input_shape = iu.obtain_input_shape(input_shape, default_size, min_size=32,
                                        require_flatten=include_top, weights=weights)
    rows, cols = input_shape[0], input_shape[1]
    if weights == "imagenet":
        if alpha not in _ALPHAS:
            raise ValueError("If imagenet weights are being loaded, alpha must be one of "
                             "`0.35`, `0.50`, `0.75`, `1.0`, `1.3` or `1.4` only; Received "
                             f"`alpha={alpha}`")
        if rows != cols or rows not in _SIZES:
            rows = 224
            warnings.warn("`input_shape` is undefined or non-square, or `rows` is not in "
                          "[96, 128, 160, 192, 224]. Weights for input shape (224, 224) "
                          "will be loaded as the default.", stacklevel=2)
    img_input = iu.image_input(model, input_tensor, input_shape, default_size)

    x = layers.Conv2D(_make_divisible(32 * alpha, 8), 3, strides=(2, 2), padding="same",
                      use_bias=False, name="Conv1")(img_input)
    x = _bn("bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)
    last = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, 1, use_bias=False, name="Conv_1")(x)
    x = _bn("Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D()(x)
        iu.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = iu.pooled(x, pooling)
    net = iu.functional(img_input, input_tensor, x,
                        name if name is not None else f"mobilenetv2_{alpha:0.2f}_{rows}")
    fname = (f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}"
             f"{'' if include_top else '_no_top'}.h5")
    return iu.load_weights(net, model, weights, fname, BASE_WEIGHT_PATH + fname)


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (mode "tf")."""
    return iu.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    return iu.decode_predictions(preds, top=top)
