"""Sequence models: an LSTM reading Fashion-MNIST images row by row, and a Conv1D text
classifier over word ids (IMDB format).

    python examples/sequence_models.py [--epochs 3] [--limit N] [--imdb PATH]
        [--skip-lstm] [--skip-text]

LSTM: each 28x28 image is 28 time steps of 28 features, LSTM(128) -> Dense(10),
Adam, batch 64 (benchmarks/bench_rnn.py times this recipe against PyTorch).

Text: Embedding -> Conv1D -> GlobalMaxPooling1D -> Dense(1, sigmoid), on
keras.datasets.imdb's format (lists of word ids, padded with pad_sequences). With
--imdb PATH (a local imdb.npz) it trains on IMDB reviews; otherwise on synthetic
"reviews" whose label is carried by a few sentiment words among random ones, so the
model has to find short patterns anywhere in a sequence, as on IMDB.
"""

import argparse
import time

import numpy as np

from kerasish import layers, models, optimizers, utils
from kerasish.datasets import fashion_mnist, imdb

VOCAB, MAXLEN = 2000, 80


def lstm_model(units=128):
    model = models.Sequential([
        layers.Input((28, 28)),
        layers.LSTM(units),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def text_model(vocab=VOCAB):
    model = models.Sequential([
        layers.Input((MAXLEN,)),
        layers.Embedding(vocab, 32),
        layers.Conv1D(64, 5, activation="relu", padding="same"),
        layers.MaxPooling1D(2),
        layers.Conv1D(64, 3, activation="relu"),
        layers.GlobalMaxPooling1D(),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def synthetic_reviews(n, seed=0, vocab=VOCAB):
    """IMDB-format data: lists of ids (1 = start, 2 = out of vocabulary, words from 3),
    ragged lengths; positive reviews hold more of ids 3-12, negative more of 13-22."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    reviews = []
    for label in labels:
        words = list(rng.integers(23, vocab, rng.integers(20, MAXLEN + 20)))
        cues = rng.integers(3, 13, 3) + (0 if label else 10)
        for cue in cues:
            words.insert(int(rng.integers(0, len(words))), int(cue))
        reviews.append([1] + [int(w) for w in words])
    return reviews, labels.astype(np.float32)


def text_data(path, limit):
    if path:
        (x, y), (xt, yt) = imdb.load_data(path=path, num_words=VOCAB, maxlen=400)
        source = f"IMDB ({path})"
    else:
        x, y = synthetic_reviews(limit or 4000, seed=0)
        xt, yt = synthetic_reviews(1000, seed=1)
        source = "synthetic IMDB-format reviews"
    if limit:
        x, y = x[:limit], y[:limit]
    pad = dict(maxlen=MAXLEN, padding="post", truncating="post")
    return (source, utils.pad_sequences(x, **pad).astype(np.float32),
            np.asarray(y, np.float32), utils.pad_sequences(xt, **pad).astype(np.float32),
            np.asarray(yt, np.float32))


def run_lstm(epochs, limit):
    (x, y), (xt, yt) = fashion_mnist.load_data()
    x, xt = (x / 255.0).astype(np.float32), (xt / 255.0).astype(np.float32)
    if limit:
        x, y = x[:limit], y[:limit]
    model = lstm_model()
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=epochs, validation_split=0.1, verbose=2)
    loss, acc = model.evaluate(xt, yt, batch_size=256, verbose=0)
    print(f"LSTM on row-sequential Fashion-MNIST: test accuracy {acc:.4f} (loss {loss:.4f}), "
          f"{time.perf_counter() - t0:.0f} s")
    return acc


def run_text(epochs, limit, path):
    source, x, y, xt, yt = text_data(path, limit)
    model = text_model()
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=64, epochs=epochs, validation_split=0.1, verbose=2)
    loss, acc = model.evaluate(xt, yt, batch_size=256, verbose=0)
    print(f"Conv1D on {source}: test accuracy {acc:.4f} (loss {loss:.4f}), "
          f"{time.perf_counter() - t0:.0f} s")
    return acc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--limit", type=int, default=None, help="use the first N training samples")
    p.add_argument("--imdb", default=None, help="a local imdb.npz for the text model")
    p.add_argument("--skip-lstm", action="store_true")
    p.add_argument("--skip-text", action="store_true")
    a = p.parse_args()
    if not a.skip_lstm:
        run_lstm(a.epochs, a.limit)
    if not a.skip_text:
        run_text(a.epochs, a.limit, a.imdb)


if __name__ == "__main__":
    main()
