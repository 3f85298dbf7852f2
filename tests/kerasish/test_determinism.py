"""Training is reproducible bit for bit on the default device (the CPU in the CPU
suite; the GPU when scripts/gpu_check.sh runs it with KERASISH_TEST_DEVICE=cuda).

The CPU twins split work across threads (GEMM blocks, K-split partial sums,
per-sample scatters) in a fixed way; the CUDA kernels use no float atomics in any
gradient, loss or metric path (split-K and bias gradients, loss sums and metric
counts add per-block partials in a fixed order). So two runs from one seed give
identical weights however threads or blocks are scheduled (test_ptx asserts that no
kernel contains a float atomic add).
"""

import numpy as np

import kerasish as keras
from kerasish import config, layers, models


def reference_cnn_weights(x, y):
    keras.utils.set_random_seed(3)
    model = models.Sequential([
        keras.Input((28, 28, 1)),
        layers.Conv2D(32, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Conv2D(64, (3, 3), activation="relu"), layers.MaxPooling2D((2, 2)),
        layers.Flatten(), layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=64, epochs=1, verbose=0)
    return model.get_weights()


def test_two_runs_from_one_seed_are_identical(capsys):
    with capsys.disabled():
        print(f"\n[determinism test on device {config.get_device()!r}]")
    rng = np.random.default_rng(0)
    x = rng.random((200, 28, 28, 1), dtype=np.float32)  # 3 full batches + a partial one
    y = rng.integers(0, 10, 200)
    first, second = reference_cnn_weights(x, y), reference_cnn_weights(x, y)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_shuffle_order_follows_set_random_seed():
    from kerasish.data import DataLoader

    x = np.arange(50, dtype=np.float32)

    def first_epoch():
        keras.utils.set_random_seed(11)
        return np.concatenate([xb for xb, _ in DataLoader(x, x, batch_size=8, prefetch=0)])

    order = first_epoch()
    assert not np.array_equal(order, x)  # shuffled
    np.testing.assert_array_equal(order, first_epoch())
