"""Bad numeric layer arguments fail at construction with a ValueError naming the layer, the
argument, what was expected and what was received (not later, at predict, or as a raw
TypeError from a comparison)."""

import re

import numpy as np
import pytest

from kerasish import layers

BAD = [
    # (constructor, argument, message fragment: expected ...)
    (lambda: layers.BatchNormalization(epsilon=-1), "BatchNormalization", "epsilon",
     r"> 0 \(a finite float\); received epsilon=-1"),
    (lambda: layers.BatchNormalization(epsilon=0), "BatchNormalization", "epsilon", "> 0"),
    (lambda: layers.BatchNormalization(epsilon="1e-3"), "BatchNormalization", "epsilon",
     "received epsilon='1e-3'"),
    (lambda: layers.BatchNormalization(epsilon=float("nan")), "BatchNormalization", "epsilon",
     "received epsilon=nan"),
    (lambda: layers.BatchNormalization(momentum=1.5), "BatchNormalization", "momentum",
     r"in \[0, 1\]"),
    (lambda: layers.BatchNormalization(momentum="high"), "BatchNormalization", "momentum",
     "received momentum='high'"),
    (lambda: layers.BatchNormalization(axis="last"), "BatchNormalization", "axis",
     "received axis='last'"),
    (lambda: layers.LeakyReLU(negative_slope="x"), "LeakyReLU", "negative_slope",
     r">= 0 \(a finite float\); received negative_slope='x'"),
    (lambda: layers.LeakyReLU(alpha=None), "LeakyReLU", "negative_slope", "received"),
    (lambda: layers.ReLU(negative_slope="x"), "ReLU", "negative_slope", "received"),
    (lambda: layers.ReLU(threshold="x"), "ReLU", "threshold", "received"),
    (lambda: layers.Dropout("0.5"), "Dropout", "rate", r"in \[0, 1\)"),
    (lambda: layers.Dropout(1.0), "Dropout", "rate", "received rate=1.0"),
    (lambda: layers.Dropout(float("nan")), "Dropout", "rate", "received rate=nan"),
    (lambda: layers.Dropout(0.5, seed="abc"), "Dropout", "seed", "received seed='abc'"),
    (lambda: layers.Dense(0), "Dense", "units", "positive integer"),
    (lambda: layers.Dense(2.5), "Dense", "units", "received units=2.5"),
    (lambda: layers.Conv2D(0, 3), "Conv2D", "filters", "positive integer"),
    (lambda: layers.Conv2D("8", 3), "Conv2D", "filters", "received filters='8'"),
    (lambda: layers.Conv2D(8, 2.5), "Conv2D", "kernel_size", "received kernel_size=2.5"),
    (lambda: layers.Conv2D(8, (3, 0)), "Conv2D", "kernel_size", "positive int"),
    (lambda: layers.Conv2D(8, (3, 3, 3)), "Conv2D", "kernel_size", "tuple of 2"),
    (lambda: layers.Conv2D(8, "3"), "Conv2D", "kernel_size", "received kernel_size='3'"),
    (lambda: layers.Conv2D(8, 3, strides=(1.5, 1)), "Conv2D", "strides", "received strides"),
    (lambda: layers.Conv2D(8, 3, strides=-1), "Conv2D", "strides", "received strides=-1"),
    (lambda: layers.Conv2D(8, 3, groups=3), "Conv2D", "groups", "received .*groups=3"),
    (lambda: layers.MaxPooling2D(pool_size=0), "MaxPooling2D", "pool_size", "positive int"),
    (lambda: layers.MaxPooling2D(pool_size=(2, 2.0)), "MaxPooling2D", "pool_size",
     r"received pool_size=\(2, 2.0\)"),
    (lambda: layers.AveragePooling2D(strides="2"), "AveragePooling2D", "strides",
     "received strides='2'"),
    (lambda: layers.MaxPooling2D(padding="full"), "MaxPooling2D", "padding", "'valid' or 'same'"),
    (lambda: layers.Reshape((2, "3")), "Reshape", "target_shape", "positive ints"),
    (lambda: layers.Reshape((0, 3)), "Reshape", "target_shape", r"received target_shape=\(0, 3\)"),
    (lambda: layers.Reshape(5), "Reshape", "target_shape", "received target_shape=5"),
]


@pytest.mark.parametrize("make,layer,arg,fragment", BAD,
                         ids=[f"{b[1]}-{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_bad_argument_is_refused_at_construction(make, layer, arg, fragment):
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert message.startswith(f"{layer}:"), message
    assert arg in message, message
    assert "expected" in message and "received" in message, message
    assert re.search(fragment, message), message


def test_good_arguments_still_work():
    assert layers.BatchNormalization(epsilon=np.float32(1e-5), momentum=0).epsilon == \
        pytest.approx(1e-5)
    assert layers.LeakyReLU(negative_slope=np.float64(0.1)).negative_slope == 0.1
    assert layers.LeakyReLU(alpha=0).negative_slope == 0.0
    assert layers.Conv2D(np.int64(4), [3, np.int32(2)], strides=[1, 2]).kernel_size == (3, 2)
    assert layers.MaxPooling2D(3).strides == (3, 3)
    assert layers.Dropout(0, seed=np.int64(3)).seed == 3
    assert layers.Reshape([-1, 4]).target_shape == (-1, 4)
    assert layers.BatchNormalization(axis=[-1]).axis == -1
