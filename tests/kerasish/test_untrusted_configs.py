"""Configs and data that would demand unbounded memory or train on nonsense are refused
with clear errors before anything is allocated (issue 14 items 4 and 9)."""

import numpy as np
import pytest

import kernels_numba
import kerasish as keras
from kerasish import layers


def test_a_huge_layer_is_refused_naming_the_layer_and_the_bytes():
    before = kernels_numba.allocation_count()
    with pytest.raises(ValueError, match=r"Layer 'huge'.*kernel.*would take "
                                         r"3,136,000,000,000,000 bytes"):
        keras.Sequential([keras.Input((784,)), layers.Dense(10**12, name="huge")])
    assert kernels_numba.allocation_count() == before
    config = keras.Sequential([keras.Input((4,)), layers.Dense(2)]).to_json()
    with pytest.raises(ValueError, match="would take"):
        keras.models.model_from_json(config.replace('"units": 2', '"units": 1000000000000'))


def test_a_huge_input_is_refused_before_its_plan_is_allocated():
    inputs = keras.Input(batch_shape=[None, 10**9])
    with pytest.raises(ValueError, match="would take"):  # the Dense kernel alone: 4 GB x 1
        keras.Model(inputs, layers.Dense(3)(inputs))
    model = keras.Model(inputs, layers.Flatten()(inputs))  # no weights: the plan is refused
    before = kernels_numba.allocation_count()
    with pytest.raises(MemoryError, match=r"batch size 32 needs [\d,]+ bytes"):
        model._executor(32, "predict")
    assert kernels_numba.allocation_count() == before


def test_empty_generators_and_out_of_range_binary_labels_are_refused():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy")
    with pytest.raises(ValueError, match="yielded no batches"):
        model.fit(iter([]), epochs=1, verbose=0)
    x = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]; received values in \[0, 2\]"):
        model.fit(x, np.array([0, 1, 2, 1]), verbose=0)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        model.fit(x, np.array([0, np.nan, 1, 1]), verbose=0)
