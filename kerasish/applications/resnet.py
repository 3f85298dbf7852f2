"""ResNet50/101/152 (He et al., 2015; v1 blocks), laid out as Keras 3's
keras.applications.ResNet50: same layer names, order and weights."""

from kerasish import layers
from kerasish.applications import imagenet_utils as iu

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
WEIGHTS_HASHES = {  # (with top, without top), md5 as Keras lists them
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
}
_EPS = 1.001e-5


def _bn(name):
    return layers.BatchNormalization(axis=3, epsilon=_EPS, name=name)


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """Bottleneck block: 1x1 -> kxk -> 1x1 (4x filters), plus the (projected) shortcut."""
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = _bn(f"{name}_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = _bn(f"{name}_1_bn")(x)
    x = layers.Activation("relu", name=f"{name}_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="same", name=f"{name}_2_conv")(x)
    x = _bn(f"{name}_2_bn")(x)
    x = layers.Activation("relu", name=f"{name}_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = _bn(f"{name}_3_bn")(x)
    x = layers.Add(name=f"{name}_add")([shortcut, x])
    return layers.Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def ResNet(stack_fn, preact, use_bias, include_top=True, weights="imagenet",
           input_tensor=None, input_shape=None, pooling=None, classes=1000,
           classifier_activation="softmax", name="resnet", weights_name=None):
    """The ResNet stem, `stack_fn`'s stages and the top (Keras's ResNet builder; only
    the v1 stacks are provided here)."""
    model = {"resnet50": "ResNet50", "resnet101": "ResNet101",
             "resnet152": "ResNet152"}.get(weights_name, name)
    iu.check_weights(model, weights, include_top, classes)
    iu.check_pooling(model, pooling)
    input_shape = iu.obtain_input_shape(input_shape, 224, min_size=32,
                                        require_flatten=include_top, weights=weights)
    img_input = iu.image_input(model, input_tensor, input_shape, 224)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = _bn("conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = _bn("post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        iu.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = iu.pooled(x, pooling, "avg_pool", "max_pool")
    net = iu.functional(img_input, input_tensor, x, name)
    if weights == "imagenet" and weights_name not in WEIGHTS_HASHES:
        raise ValueError(f"{model}: no ImageNet weights are known for it; pass "
                         f"weights=None or a weights file path")
    if weights == "imagenet":
        top = "" if include_top else "_notop"
        fname = f"{weights_name}_weights_tf_dim_ordering_tf_kernels{top}.h5"
        return iu.load_weights(net, model, weights, fname, BASE_WEIGHTS_PATH + fname,
                               WEIGHTS_HASHES[weights_name][0 if include_top else 1])
    return iu.load_weights(net, model, weights, None, None)


def _resnet(depths, name, weights_name, **kwargs):
    def stack_fn(x):
        x = stack_residual_blocks_v1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack_residual_blocks_v1(x, 128, depths[1], name="conv3")
        x = stack_residual_blocks_v1(x, 256, depths[2], name="conv4")
        return stack_residual_blocks_v1(x, 512, depths[3], name="conv5")

    return ResNet(stack_fn, preact=False, use_bias=True, name=name,
                  weights_name=weights_name, **kwargs)


def ResNet50(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
             pooling=None, classes=1000, classifier_activation="softmax", name="resnet50"):
    """ResNet50 with Keras 3's arguments (input at least 32x32; default 224x224x3)."""
    return _resnet((3, 4, 6, 3), name, "resnet50", include_top=include_top,
                   weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                   pooling=pooling, classes=classes,
                   classifier_activation=classifier_activation)


def ResNet101(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", name="resnet101"):
    return _resnet((3, 4, 23, 3), name, "resnet101", include_top=include_top,
                   weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                   pooling=pooling, classes=classes,
                   classifier_activation=classifier_activation)


def ResNet152(include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
              pooling=None, classes=1000, classifier_activation="softmax", name="resnet152"):
    return _resnet((3, 8, 36, 3), name, "resnet152", include_top=include_top,
                   weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                   pooling=pooling, classes=classes,
                   classifier_activation=classifier_activation)


def preprocess_input(x, data_format=None):
    """RGB -> BGR and minus the ImageNet mean per channel (mode "caffe")."""
    return iu.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    return iu.decode_predictions(preds, top=top)
