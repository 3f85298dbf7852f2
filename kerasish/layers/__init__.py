"""kerasish.layers: Keras layer names and constructor arguments, channels_last."""

from kerasish.layers.activation_layers import LeakyReLU, ReLU, Softmax
from kerasish.layers.additive_attention import AdditiveAttention
from kerasish.layers.attention import Attention, MultiHeadAttention
from kerasish.layers.conv1d import Conv1D, UpSampling1D
from kerasish.layers.conv1d_transpose import Conv1DTranspose
from kerasish.layers.conv_variants import Conv2DTranspose, DepthwiseConv2D, SeparableConv2D
from kerasish.layers.convolutional import Conv2D
from kerasish.layers.core import Activation, Dense, Dropout, Flatten, Rescaling, Reshape
from kerasish.layers.embedding import Embedding, Masking
from kerasish.layers.input_layer import Input, InputLayer
from kerasish.layers.layer import Layer
from kerasish.layers.layer_norm import LayerNormalization, Normalization
from kerasish.layers.merging import (Add, Average, Concatenate, Maximum, Minimum, Multiply,
                                     Subtract, add, average, concatenate, maximum, minimum,
                                     multiply, subtract)
from kerasish.layers.noise import GaussianDropout, GaussianNoise, SpatialDropout2D
from kerasish.layers.normalization import BatchNormalization
from kerasish.layers.pooling import AveragePooling2D, GlobalAveragePooling2D, MaxPooling2D
from kerasish.layers.preprocessing import (PREPROCESSING_LAYERS, CenterCrop, RandomBrightness,
                                           RandomContrast, RandomCrop, RandomFlip,
                                           RandomRotation, RandomTranslation, RandomZoom,
                                           Resizing)
from kerasish.layers.pooling1d import (AveragePooling1D, GlobalAveragePooling1D,
                                       GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPooling1D)
from kerasish.layers.recurrent import GRU, LSTM, SimpleRNN
from kerasish.layers.reshaping import (Cropping2D, Identity, Permute, RepeatVector,
                                       UpSampling2D, ZeroPadding2D)
from kerasish.layers.rnn import RNN
from kerasish.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from kerasish.layers.wrappers import Bidirectional, TimeDistributed

Convolution2D = Conv2D
MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
Convolution1D = Conv1D
Convolution1DTranspose = Conv1DTranspose
MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution2D = SeparableConv2D
IMAGE_LAYERS = (LayerNormalization, Normalization, UpSampling2D, ZeroPadding2D, Cropping2D,
                Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, SpatialDropout2D,
                GaussianNoise, GaussianDropout, Permute, RepeatVector, Identity)
SEQUENCE_LAYERS = (Embedding, Masking, SimpleRNN, LSTM, GRU, RNN, SimpleRNNCell, LSTMCell,
                   GRUCell, StackedRNNCells, Bidirectional, TimeDistributed,
                   Conv1D, Conv1DTranspose, UpSampling1D, MaxPooling1D, AveragePooling1D,
                   GlobalMaxPooling1D, GlobalAveragePooling1D, GlobalMaxPooling2D)

BUILTIN = {cls.__name__: cls for cls in SEQUENCE_LAYERS + IMAGE_LAYERS + PREPROCESSING_LAYERS + (
    MultiHeadAttention, Attention, AdditiveAttention,
    InputLayer, Dense, Activation, Flatten, Reshape, Dropout, Conv2D, MaxPooling2D,
    AveragePooling2D, GlobalAveragePooling2D, BatchNormalization, ReLU, LeakyReLU, Softmax,
    Rescaling, Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate)}

def register(cls, name=None):
    """Make a custom Layer class loadable from configs by its class name (the same
    registry as `kerasish.saving.register_serializable`)."""
    from kerasish.saving import serialization

    serialization.get_custom_objects()[name or cls.__name__] = cls
    return cls


def deserialize(config, custom_objects=None):
    """A layer from a Keras {"class_name", "config"} dict (custom_objects for custom layers)."""
    from kerasish.saving import serialization

    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Layer config must be a dict with 'class_name'; received {config!r}")
    name = config["class_name"]
    if name in ("Sequential", "Functional", "Model"):  # a nested model
        from kerasish import models

        cls = models.Sequential if name == "Sequential" else models.Functional
        return cls.from_config(dict(config.get("config", {})), custom_objects=custom_objects)
    cls = serialization.get_registered_object(name, custom_objects) or BUILTIN.get(name)
    if cls is None and name == "Lambda":
        raise ValueError(
            "Refusing to deserialize a Lambda layer: its config carries Python code; "
            "kerasish has no Lambda layer and never runs code from a config "
            "(load_model's safe_mode=False does not change that). Write the computation "
            "as a custom layer registered with "
            "@keras.saving.register_keras_serializable()")
    if cls is None:
        raise ValueError(
            f"Unknown layer: '{name}'. Please ensure you are using a kerasish layer or pass the "
            f"class in custom_objects. Supported layers: {sorted(BUILTIN)}")
    return cls.from_config(dict(config.get("config", {})))


def serialize(layer):
    from kerasish.activations import CustomActivation

    config = layer.get_config()
    if isinstance(config.get("activation"), CustomActivation):  # a user function, by name
        config["activation"] = config["activation"].config(layer.name)
    return {"class_name": type(layer).__name__, "config": config}


__all__ = ["Layer", "Input", "InputLayer", "Dense", "Activation", "Flatten", "Reshape",
           "Dropout", "Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D",
           "BatchNormalization", "ReLU", "LeakyReLU", "Softmax", "Rescaling", "deserialize",
           "serialize", "register",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate",
           "Embedding", "Masking", "SimpleRNN", "LSTM", "GRU", "RNN", "SimpleRNNCell",
           "LSTMCell", "GRUCell", "StackedRNNCells", "Bidirectional",
           "TimeDistributed", "Conv1D", "Conv1DTranspose", "UpSampling1D", "MaxPooling1D",
           "AveragePooling1D",
           "GlobalMaxPooling1D", "GlobalAveragePooling1D", "GlobalMaxPooling2D",
           "LayerNormalization", "Normalization", "UpSampling2D", "ZeroPadding2D", "Cropping2D",
           "Conv2DTranspose", "DepthwiseConv2D", "SeparableConv2D", "SpatialDropout2D",
           "GaussianNoise", "GaussianDropout", "Permute", "RepeatVector", "Identity",
           "MultiHeadAttention", "Attention", "AdditiveAttention", "RandomFlip", "RandomRotation", "RandomZoom",
           "RandomTranslation", "RandomCrop", "RandomContrast", "RandomBrightness", "Resizing",
           "CenterCrop"]
