"""Real Keras 3 on its torch backend, for side-by-side tests (skips when absent)."""

import os

import pytest


def real_keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch", reason="interop tests need torch")
    real = pytest.importorskip("keras", reason="interop tests need Keras 3")
    if not real.__version__.startswith("3."):
        pytest.skip(f"interop tests need Keras 3; found {real.__version__}")
    return real
