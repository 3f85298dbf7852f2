"""Copy a data set into a kerasish data folder, from any source load_data accepts.

    python datasets/scripts/prepare.py mnist                     # download (online)
    python datasets/scripts/prepare.py fashion_mnist --source /usr/share/datasets/fashion-mnist
    python datasets/scripts/prepare.py mnist --source ~/Downloads/mnist.npz --out /data --format idx

Writes `<out>/<name>/` (default out: $KERASISH_DATA_DIR, else ~/.kerasish/datasets) as
`<name>.npz` or the four gzipped IDX files, after load_data has validated them, and
prints their sha256. Copy that folder to an offline machine and point
KERASISH_DATA_DIR at its parent. The data itself is never committed to the repository.
"""

import argparse
import hashlib
import os
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from kerasish.datasets import fashion_mnist, mnist, write_idx  # noqa: E402
from kerasish.datasets._files import IDX_STEMS  # noqa: E402

LOADERS = {"mnist": mnist, "fashion_mnist": fashion_mnist}


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=sorted(LOADERS))
    p.add_argument("--source", help="file or folder for load_data(path=...); default: "
                                    "the usual search, then a download")
    p.add_argument("--out", help="data root (default $KERASISH_DATA_DIR or "
                                 "~/.kerasish/datasets)")
    p.add_argument("--format", choices=("npz", "idx"), default="npz")
    a = p.parse_args()
    out_root = a.out or os.environ.get("KERASISH_DATA_DIR") or os.path.join(
        os.path.expanduser("~"), ".kerasish", "datasets")
    (x_train, y_train), (x_test, y_test) = LOADERS[a.name].load_data(path=a.source)
    target = os.path.join(out_root, a.name)
    os.makedirs(target, exist_ok=True)
    arrays = (x_train, y_train, x_test, y_test)
    if a.format == "npz":
        names = [f"{a.name}.npz"]
        with tempfile.NamedTemporaryFile(dir=target, suffix=".npz", delete=False) as tmp:
            np.savez_compressed(tmp, x_train=x_train, y_train=y_train,
                                x_test=x_test, y_test=y_test)
        os.chmod(tmp.name, 0o644)  # NamedTemporaryFile creates it private
        os.replace(tmp.name, os.path.join(target, names[0]))
    else:
        names = [s + ".gz" for s in IDX_STEMS]
        for name, arr in zip(names, arrays):
            tmp = os.path.join(target, f".{name}.part")
            write_idx(tmp, arr, compress=True)
            os.replace(tmp, os.path.join(target, name))
    print(f"{a.name}: train {x_train.shape}, test {x_test.shape} -> {target}")
    for name in names:
        print(f"{_sha256(os.path.join(target, name))}  {name}")


if __name__ == "__main__":
    main()
