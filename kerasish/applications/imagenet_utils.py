"""What every application shares (Keras 3's keras/src/applications/imagenet_utils.py):
argument checks (weights, classes, pooling, input_shape), the classifier top, the
ImageNet weight download, `preprocess_input` and `decode_predictions`.

channels_last only (kerasish's only data format). Error messages are Keras's, with the
model's name in front, so a user's search for the Keras message still finds it.
"""

import json
import os
import warnings

import numpy as np

from kerasish import activations, layers
from kerasish.models import Model
from kerasish.utils import file_utils

CLASS_INDEX = None
CLASS_INDEX_PATH = ("https://storage.googleapis.com/download.tensorflow.org/"
                    "data/imagenet_class_index.json")
CLASS_INDEX_HASH = "c2c37ea517e94d9795004a39431a14cb"
POOLINGS = (None, "avg", "max")


# -- argument checks ----------------------------------------------------------------

def check_weights(model, weights, include_top, classes):
    """Keras's two checks on `weights`: None, "imagenet" or an existing file; and
    1000 classes when the ImageNet top is loaded."""
    if not (weights in {"imagenet", None} or
            (isinstance(weights, (str, os.PathLike)) and os.path.exists(weights))):
        raise ValueError(
            f"{model}: The `weights` argument should be either `None` (random "
            f"initialization), 'imagenet' (pre-training on ImageNet), or the path to the "
            f"weights file to be loaded.  Received: weights={weights}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError(
            f"{model}: If using `weights='imagenet'` with `include_top=True`, `classes` "
            f"should be 1000.  Received classes={classes}")


def check_pooling(model, pooling):
    """Keras ignores an unknown `pooling` silently; kerasish names it (a typo such as
    "average" would otherwise leave a 4D output the user did not ask for)."""
    if pooling not in POOLINGS:
        raise ValueError(f"{model}: expected pooling to be one of None, 'avg' or 'max'; "
                         f"received pooling={pooling!r}")


def obtain_input_shape(input_shape, default_size, min_size, require_flatten, weights=None):
    """The model's per-image shape (H, W, C), validated as Keras's obtain_input_shape."""
    if input_shape is not None:
        input_shape = tuple(input_shape)
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if input_shape[-1] not in {1, 3}:
            warnings.warn("This model usually expects 1 or 3 input channels. However, it "
                          f"was passed an input_shape with {input_shape[-1]} input "
                          "channels.", stacklevel=3)
        default_shape = (default_size, default_size, input_shape[-1])
    else:
        default_shape = (default_size, default_size, 3)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` "
                             f"weights, `input_shape` should be {default_shape}.  "
                             f"Received: input_shape={input_shape}")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers. Received: "
                             f"input_shape={input_shape}")
        if input_shape[-1] != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; Received "
                             f"`input_shape={input_shape}`")
        if any(d is not None and d < min_size for d in input_shape[:2]):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; "
                             f"Received: input_shape={input_shape}")
    else:
        input_shape = default_shape if require_flatten else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError("If `include_top` is True, you should specify a static "
                         f"`input_shape`. Received: input_shape={input_shape}")
    return input_shape


def validate_activation(classifier_activation, weights):
    """Pretrained tops take only softmax or no activation (Keras's rule)."""
    if weights is None:
        return
    if activations.get(classifier_activation) not in ("softmax", "linear"):
        raise ValueError("Only `None` and `softmax` activations are allowed for the "
                         "`classifier_activation` argument when using pretrained weights, "
                         "with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


def correct_pad(inputs, kernel_size):
    """Zero padding ((top, bottom), (left, right)) before a strided 'valid' conv, so it
    matches TensorFlow's 'same' on even sizes (Keras's correct_pad)."""
    size = inputs.shape[1:3]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


# -- graph ends ----------------------------------------------------------------------

def image_input(model, input_tensor, input_shape, default_size):
    """A new Input of `input_shape`, or the caller's symbolic `input_tensor`.

    A None height or width (Keras's default without the top, (None, None, 3)) is taken:
    the model is fully convolutional and runs on each batch's image size."""
    if input_tensor is not None and getattr(input_tensor, "_keras_history", None) is None:
        raise ValueError(f"{model}: input_tensor must be a symbolic tensor (the output of "
                         f"keras.Input or of a layer); received {type(input_tensor).__name__}"
                         " (kerasish does not wrap arrays as input tensors)")
    if input_tensor is None:
        return layers.Input(shape=input_shape)
    return input_tensor


def source_inputs(tensor):
    """The Input tensors `tensor` depends on (Keras's operation_utils.get_source_inputs)."""
    found, seen, stack = [], set(), [tensor]
    while stack:
        t = stack.pop()
        node = t.node
        if node.is_input:
            if id(t) not in seen:
                seen.add(id(t))
                found.append(t)
            continue
        stack.extend(reversed(node.input_tensors))
    return found[0] if len(found) == 1 else found


def pooled(x, pooling, avg_name=None, max_name=None):
    """include_top=False: the optional global pooling of the feature map."""
    if pooling == "avg":
        return layers.GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return layers.GlobalMaxPooling2D(name=max_name)(x)
    return x


def functional(img_input, input_tensor, x, name):
    inputs = source_inputs(input_tensor) if input_tensor is not None else img_input
    return Model(inputs, x, name=name)


# -- weights -------------------------------------------------------------------------

def load_weights(model, model_name, weights, fname, origin, file_hash=None):
    """weights="imagenet": fetch Keras's file (verified by hash when Keras gives one);
    a path: load that file. Offline, the error says how to pass a local copy."""
    if weights is None:
        return model
    if weights == "imagenet":
        try:
            path = file_utils.get_file(fname, origin, cache_subdir="models",
                                       file_hash=file_hash)
        except OSError as e:  # DownloadError and a cache that cannot be written
            raise OSError(
                f"{model_name}: could not download the ImageNet weights ({e}). Without "
                f"internet access, download {origin} on another machine, copy it here and "
                f"pass its local path instead: "
                f"{model_name}(weights='/path/to/{fname}', ...)") from e
    else:
        path = os.fspath(weights)
    model.load_weights(path)
    return model


# -- preprocessing and decoding -------------------------------------------------------

_CAFFE_MEAN = (103.939, 116.779, 123.68)  # BGR
_TORCH_MEAN, _TORCH_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe"):
    """Scale a batch of RGB images in [0, 255] as the ImageNet weights expect.

    mode "caffe": RGB -> BGR, minus the ImageNet mean per channel; "tf": to [-1, 1];
    "torch": to [0, 1], then per-channel mean/std. Like Keras, a float NumPy input is
    overwritten in place where possible; integer inputs become float32.
    """
    if mode not in {"caffe", "tf", "torch"}:
        raise ValueError("Expected mode to be one of `caffe`, `tf` or `torch`. "
                         f"Received: mode={mode}")
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError("Expected data_format to be one of `channels_first` or "
                         f"`channels_last`. Received: data_format={data_format}")
    if getattr(x, "_keras_history", None) is not None:
        raise TypeError("preprocess_input: received a symbolic tensor; kerasish applies it "
                        "to NumPy arrays (use layers.Rescaling/Normalization in a model)")
    x = np.asarray(x)
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(np.float32)
    channels_first = data_format == "channels_first"
    axis = (0 if x.ndim == 3 else 1) if channels_first else x.ndim - 1
    if x.shape[axis] != 3:
        raise ValueError(f"preprocess_input: expected 3 color channels on axis {axis}; "
                         f"received an array of shape {x.shape}")
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    shape = [1] * x.ndim
    shape[axis] = 3
    if mode == "torch":
        x /= 255.0
        x -= np.reshape(_TORCH_MEAN, shape).astype(x.dtype)
        x /= np.reshape(_TORCH_STD, shape).astype(x.dtype)
        return x
    x = np.flip(x, axis=axis)
    x = x - np.reshape(_CAFFE_MEAN, shape).astype(x.dtype)
    return x


def decode_predictions(preds, top=5):
    """[(class_name, description, score), ...] for the `top` classes of each row of a
    (samples, 1000) array. Needs Keras's imagenet_class_index.json (downloaded once)."""
    global CLASS_INDEX
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D "
                         f"array of shape (samples, 1000)). Received array with shape: "
                         f"{preds.shape}")
    if CLASS_INDEX is None:
        try:
            fpath = file_utils.get_file("imagenet_class_index.json", CLASS_INDEX_PATH,
                                        cache_subdir="models", file_hash=CLASS_INDEX_HASH)
        except OSError as e:
            raise OSError(f"decode_predictions: could not download the ImageNet class "
                          f"index from {CLASS_INDEX_PATH} ({e}); without internet, copy "
                          f"that file to ~/.kerasish/models/imagenet_class_index.json") from e
        with open(fpath) as f:
            CLASS_INDEX = json.load(f)
    results = []
    for pred in preds:
        top_indices = pred.argsort()[-top:][::-1]
        result = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in top_indices]
        result.sort(key=lambda r: r[2], reverse=True)
        results.append(result)
    return results
