"""kerasish.backend: the parts of `keras.backend` that Keras scripts call."""

from kerasish.utils import clear_session

__all__ = ["clear_session"]
