"""VGG16 (Simonyan & Zisserman, 2014), laid out as Keras 3's keras.applications.VGG16:
same layer names, order and weights."""

from kerasish import layers
from kerasish.applications import imagenet_utils as iu

WEIGHTS_PATH = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                "vgg16/vgg16_weights_tf_dim_ordering_tf_kernels.h5")
WEIGHTS_PATH_NO_TOP = ("https://storage.googleapis.com/tensorflow/keras-applications/"
                       "vgg16/vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5")
WEIGHTS_HASH, WEIGHTS_HASH_NO_TOP = ("64373286793e3c8b2b4e3219cbf3544b",
                                     "6d6bbae143d832006294945121d1f1fc")
_STAGES = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))  # (filters, convolutions)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
          pooling=None, classes=1000, classifier_activation="softmax", name="vgg16"):
    """VGG16 with Keras 3's arguments (input at least 32x32; default 224x224x3)."""
    model = "VGG16"
    iu.check_weights(model, weights, include_top, classes)
    iu.check_pooling(model, pooling)
    input_shape = iu.obtain_input_shape(input_shape, 224, min_size=32,
                                        require_flatten=include_top, weights=weights)
    img_input = iu.image_input(model, input_tensor, input_shape, 224)
    x = img_input
    for block, (filters, convs) in enumerate(_STAGES, start=1):
        for i in range(1, convs + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{block}_conv{i}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        iu.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = iu.pooled(x, pooling)
    net = iu.functional(img_input, input_tensor, x, name)
    origin, file_hash = ((WEIGHTS_PATH, WEIGHTS_HASH) if include_top
                         else (WEIGHTS_PATH_NO_TOP, WEIGHTS_HASH_NO_TOP))
    return iu.load_weights(net, model, weights, origin.rsplit("/", 1)[1], origin, file_hash)


def preprocess_input(x, data_format=None):
    """RGB -> BGR and minus the ImageNet mean per channel (mode "caffe")."""
    return iu.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    return iu.decode_predictions(preds, top=top)
