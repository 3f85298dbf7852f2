#!/usr/bin/env bash
# The main job: install kerasish, train the seed CNN (MNIST if found or downloadable,
# else Fashion-MNIST), save an .h5, load it back and evaluate. Extra args go to the script.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q -e .
if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 ||
    (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1) || true
fi
exec "$PY" examples/mnist_cnn.py "$@"
