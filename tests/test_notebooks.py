"""Every notebook in notebooks/ runs top to bottom, with the fast parameters.

Execution needs nbclient, nbformat and ipykernel (skipped with a reason without them).
Each notebook reads KERASISH_NOTEBOOK_FAST=1 in its parameter cell and shrinks its run.
The stored notebooks carry no outputs (outputs would go stale and hold machine paths
and timings); the run here never compares against stored outputs. Set
KERASISH_NOTEBOOK_OUTPUT_DIR to keep the executed copies, e.g. as CI artifacts.
"""

import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_reference_cnn", "03_checkpoints", "04_custom_layer",
            "05_devices", "06_sequence_models", "07_reinforcement_learning"]
CELL_TIMEOUT_S = 600
MISSING = ("executing notebooks needs nbclient, nbformat and ipykernel "
           "(pip install nbclient nbformat ipykernel)")


@pytest.fixture
def nbutils(monkeypatch):
    monkeypatch.syspath_prepend(str(NOTEBOOK_DIR))
    return importlib.import_module("nbutils")


def test_every_notebook_is_here():
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    dirty = [i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
             and (cell.get("outputs") or cell.get("execution_count") is not None)]
    assert not dirty, (
        f"{path.name}: code cells {dirty} have stored outputs or execution counts; "
        "notebooks are committed without outputs (Jupyter: Edit > Clear Outputs of All Cells)")
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason=MISSING)
    nbclient = pytest.importorskip("nbclient", reason=MISSING)
    pytest.importorskip("ipykernel", reason=MISSING)
    # The kernel inherits this environment: fast parameters, real CUDA or the CPU (the
    # simulator would take hours to train), and this checkout even when not installed.
    monkeypatch.setenv("KERASISH_NOTEBOOK_FAST", "1")
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    nb = nbformat.read(path, as_version=4)
    if any("nbutils.load_data(" in cell.source for cell in nb.cells):
        _require_data()
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    try:
        client.execute()  # raises CellExecutionError with the cell and its traceback
    finally:
        out_dir = os.environ.get("KERASISH_NOTEBOOK_OUTPUT_DIR")
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            nbformat.write(nb, os.path.join(out_dir, path.name))
    errors = [o for cell in nb.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


_data_missing = []


def _require_data():
    """Skip (once checked, quickly) where no MNIST, mnist-small or Fashion-MNIST exists."""
    if not _data_missing:
        sys.path.insert(0, str(NOTEBOOK_DIR))
        try:
            from kerasish.datasets import DatasetNotFoundError
            importlib.import_module("nbutils").load_data(train=1, test=1)
            _data_missing.append("")
        except DatasetNotFoundError as e:
            _data_missing.append(str(e).splitlines()[0])
        finally:
            sys.path.remove(str(NOTEBOOK_DIR))
    if _data_missing[0]:
        pytest.skip("no data set for the notebooks: neither MNIST, ../shared/datasets/"
                    "mnist-small nor Fashion-MNIST (apt-get install dataset-fashion-mnist) "
                    f"was found; {_data_missing[0]}")


def test_text_fallbacks_without_matplotlib(nbutils, monkeypatch, capsys):
    monkeypatch.setattr(nbutils, "plt", None)
    images = np.zeros((3, 28, 28), np.uint8)
    images[0, 10:18, 12:16] = 255
    nbutils.show_images(images, ["one", "two", "three"], per_row=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("one") and "| two" in lines[0]
    assert len(lines) == 1 + 14 + 1 + 1 + 14 + 1  # titles, 14 art rows, blank; twice
    assert "@" in "".join(lines[1:15]) and lines[1:15][0].strip(" |") == ""

    class History:
        history = {"loss": [1.5, 0.75], "accuracy": [0.5, 0.8], "val_loss": [1.25, 0.5],
                   "val_accuracy": [0.6, 0.9]}

    nbutils.plot_history(History())
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["epoch", "loss", "val_loss", "accuracy", "val_accuracy"]
    assert out[2].split() == ["2", "0.7500", "0.5000", "0.8000", "0.9000"]

    counts = nbutils.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3)
    np.testing.assert_array_equal(counts, [[1, 0, 0], [0, 1, 1], [0, 0, 1]])
    nbutils.show_confusion(counts, ["a", "b", "c"])
    out = capsys.readouterr().out.splitlines()
    assert out[-2].split() == ["b", "0", "1", "1"]


def _fake_splits(n_train, n_test, sorted_labels):
    y_train = np.repeat(np.arange(10), n_train // 10) if sorted_labels else \
        np.arange(n_train) % 10
    x_train = np.broadcast_to(y_train[:, None, None], (n_train, 28, 28)).astype(np.uint8)
    y_test = np.arange(n_test) % 10
    x_test = np.broadcast_to(y_test[:, None, None], (n_test, 28, 28)).astype(np.uint8)
    return (x_train, y_train.astype(np.uint8)), (x_test, y_test.astype(np.uint8))


def test_load_data_falls_back_and_shuffles(nbutils, monkeypatch, tmp_path, capsys):
    from kerasish.datasets import DatasetNotFoundError, write_idx

    def offline(path=None):
        if path is not None:  # mnist-small is read through mnist.load_data(path=...)
            return real_mnist(path=path)
        raise DatasetNotFoundError("load_data: no copy of MNIST was found\nplaces...")

    real_mnist = nbutils.mnist.load_data
    monkeypatch.setattr(nbutils.mnist, "load_data", offline)
    monkeypatch.setattr(nbutils.fashion_mnist, "load_data",
                        lambda: _fake_splits(30, 7, sorted_labels=False))

    # No mnist-small: Fashion-MNIST, with its class names.
    monkeypatch.setattr(nbutils, "MNIST_SMALL", tmp_path / "absent")
    name, names, (x, y), (xt, yt) = nbutils.load_data(train=12, test=5)
    assert name == "Fashion-MNIST" and names[9] == "Ankle boot"
    assert x.shape == (12, 28, 28) and y.shape == (12,) and xt.shape == (5, 28, 28)
    np.testing.assert_array_equal(x[:, 0, 0], y)  # images still match their labels
    out = capsys.readouterr().out
    assert "not used: MNIST: no copy of MNIST was found" in out and "Fashion-MNIST" in out

    # mnist-small present: real digits, sorted by class on disk, shuffled here.
    small = tmp_path / "mnist-small"
    small.mkdir()
    (x_tr, y_tr), (x_te, y_te) = _fake_splits(50, 9, sorted_labels=True)
    for stem, arr in zip(("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
                         (x_tr, y_tr, x_te, y_te)):
        write_idx(small / stem, arr)
    monkeypatch.setattr(nbutils, "MNIST_SMALL", small)
    name, names, (x, y), (xt, yt) = nbutils.load_data(train=10, test=None)
    assert name.startswith("MNIST (mnist-small") and names == nbutils.DIGITS
    assert len(x) == 10 and len(xt) == 9 and len(set(y.tolist())) > 2  # not the first class
    np.testing.assert_array_equal(x[:, 5, 5], y)
