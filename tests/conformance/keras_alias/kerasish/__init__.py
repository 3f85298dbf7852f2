"""`import kerasish as keras` meaning real Keras 3 (torch backend), for the conformance harness.

Put this folder's parent (tests/conformance/keras_alias) first on sys.path and the same case text
runs on real Keras: `kerasish` and every `kerasish.<sub>` module name resolve to `keras` and
`keras.<sub>`. Nothing here is kerasish's code.
"""

import importlib
import importlib.abc
import importlib.util
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras as _keras  # noqa: E402


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Maps `kerasish.x.y` to the already-importable `keras.x.y`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("kerasish."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("keras" + spec.name[len("kerasish"):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _AliasFinder())
sys.modules[__name__] = _keras
