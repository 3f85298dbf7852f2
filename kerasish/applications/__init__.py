"""kerasish.applications: Keras 3's reference architectures on the functional API.

Same signatures, layer names, order and weights as keras.applications, so Keras's
ImageNet files (weights="imagenet", downloaded once into ~/.kerasish/models) and
weight files saved by either library load in the other. channels_last only.

Every layer is a kerasish.layers class with Keras's name, so whole saved models
(.keras/.h5) cross both ways with plain load_model. CUSTOM_OBJECTS is kept empty for
callers that passed it when these models needed helper classes.
"""

from kerasish.applications import efficientnet, imagenet_utils, mobilenet_v2  # noqa: I001
from kerasish.applications import resnet, vgg16, xception
from kerasish.applications.efficientnet import EfficientNetB0, EfficientNetB1
from kerasish.applications.efficientnet import EfficientNetB2, EfficientNetB3
from kerasish.applications.mobilenet_v2 import MobileNetV2
from kerasish.applications.resnet import ResNet50, ResNet101, ResNet152
from kerasish.applications.vgg16 import VGG16
from kerasish.applications.xception import Xception

CUSTOM_OBJECTS = {}  # nothing custom any more (see the module docstring)
resnet50 = resnet  # keras.applications.resnet50 is the same module's ResNet50

__all__ = ["CUSTOM_OBJECTS", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
           "MobileNetV2", "ResNet50", "ResNet101", "ResNet152", "VGG16", "Xception",
           "efficientnet", "imagenet_utils", "mobilenet_v2", "resnet", "resnet50", "vgg16",
           "xception"]
