"""Xception (Chollet, 2017), laid out as Keras 3's keras.applications.Xception: same
layer names (the residual 1x1 convolutions, their BatchNormalizations and the adds are
unnamed there too, so they take the session's auto names), order and weights."""

from kerasish import layers
from kerasish.applications import imagenet_utils as iu

WEIGHTS_PATH = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                "xception/xception_weights_tf_dim_ordering_tf_kernels.h5")
WEIGHTS_PATH_NO_TOP = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                       "xception/xception_weights_tf_dim_ordering_tf_kernels_notop.h5")
WEIGHTS_HASH, WEIGHTS_HASH_NO_TOP = ("0a58e3b7378bc2990ea3b43d5981f1f6",
                                     "b0042744bf5b25fce3cb969f33bebb97")


def _sep(x, filters, name):
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=f"{name}_bn")(x)


def _residual(x, filters):
    r = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=-1)(r)


def _pool(x, name):
    return layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=name)(x)


def _relu(x, name):
    return layers.Activation("relu", name=name)(x)


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="xception"):
    """Xception with Keras 3's arguments (input at least 71x71; default 299x299x3)."""
    model = "Xception"
    iu.check_weights(model, weights, include_top, classes)
    iu.check_pooling(model, pooling)
    input_shape = iu.obtain_input_shape(input_shape, 299, min_size=71,
                                        require_flatten=include_top, weights=weights)
    img_input = iu.image_input(model, input_tensor, input_shape, 299)

    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = _relu(x, "block1_conv1_act")
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = _relu(x, "block1_conv2_act")

    # Entry flow: blocks 2-4 halve the size; block 2 starts without a ReLU.
    for block, filters in ((2, 128), (3, 256), (4, 728)):
        residual = _residual(x, filters)
        if block > 2:
            x = _relu(x, f"block{block}_sepconv1_act")
        x = _sep(x, filters, f"block{block}_sepconv1")
        x = _relu(x, f"block{block}_sepconv2_act")
        x = _sep(x, filters, f"block{block}_sepconv2")
        x = _pool(x, f"block{block}_pool")
        x = layers.add([x, residual])

    # Middle flow: eight identity-shortcut blocks of three separable convolutions.
    for i in range(8):
        residual = x
        prefix = f"block{i + 5}"
        for j in (1, 2, 3):
            x = _relu(x, f"{prefix}_sepconv{j}_act")
            x = _sep(x, 728, f"{prefix}_sepconv{j}")
        x = layers.add([x, residual])

    # Exit flow.
    residual = _residual(x, 1024)
    x = _relu(x, "block13_sepconv1_act")
    x = _sep(x, 728, "block13_sepconv1")
    x = _relu(x, "block13_sepconv2_act")
    x = _sep(x, 1024, "block13_sepconv2")
    x = _pool(x, "block13_pool")
    x = layers.add([x, residual])
    x = _sep(x, 1536, "block14_sepconv1")
    x = _relu(x, "block14_sepconv1_act")
    x = _sep(x, 2048, "block14_sepconv2")
    x = _relu(x, "block14_sepconv2_act")

    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        iu.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = iu.pooled(x, pooling)
    net = iu.functional(img_input, input_tensor, x, name)
    if include_top:
        fname, origin, file_hash = (WEIGHTS_PATH.rsplit("/", 1)[1], WEIGHTS_PATH,
                                    WEIGHTS_HASH)
    else:
        fname, origin, file_hash = (WEIGHTS_PATH_NO_TOP.rsplit("/", 1)[1],
                                    WEIGHTS_PATH_NO_TOP, WEIGHTS_HASH_NO_TOP)
    return iu.load_weights(net, model, weights, fname, origin, file_hash)


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (mode "tf")."""
    return iu.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    return iu.decode_predictions(preds, top=top)
