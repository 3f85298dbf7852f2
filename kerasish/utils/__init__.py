"""kerasish.utils: to_categorical, normalize, set_random_seed, get_file (ExtractLimits for
its extract=True), clear_session, pad_sequences, PyDataset/Sequence, split_dataset,
plot_model/model_to_dot, unpack_x_y_sample_weight / pack_x_y_sample_weight (custom train
steps)."""

import gc

import numpy as np

from kerasish.random import set_seed as set_random_seed
from kerasish.utils.data_packing import pack_x_y_sample_weight, unpack_x_y_sample_weight
from kerasish.utils.dataset_utils import split_dataset
from kerasish.utils.file_utils import ExtractLimits, get_file
from kerasish.utils.model_visualization import model_to_dot, plot_model
from kerasish.utils.numerical_utils import normalize
from kerasish.utils.py_dataset import PyDataset, Sequence
from kerasish.utils.sequence_utils import pad_sequences


def to_categorical(x, num_classes=None):
    """One-hot encode integer class ids (Keras: float64 result, trailing 1-dim squeezed)."""
    x = np.array(x, dtype="int64")
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x.reshape(x.shape[:-1])
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: class ids must be in [0, {num_classes}); "
                         f"received values in [{x.min()}, {x.max()}]")
    out = np.zeros((x.size, num_classes))
    out[np.arange(x.size), x.reshape(-1)] = 1
    return out.reshape((*x.shape, num_classes))


def clear_session():
    """Start auto-generated layer names over (dense, dense_1, ...), as Keras's
    clear_session does; models built before keep working. Also runs the garbage
    collector, so buffers of dropped models are freed now."""
    from kerasish.layers.layer import reset_names

    reset_names()
    gc.collect()


__all__ = ["ExtractLimits", "PyDataset", "Sequence", "clear_session", "get_file", "model_to_dot",
           "normalize", "pack_x_y_sample_weight", "pad_sequences", "plot_model",
           "unpack_x_y_sample_weight",
           "set_random_seed", "split_dataset", "to_categorical"]
