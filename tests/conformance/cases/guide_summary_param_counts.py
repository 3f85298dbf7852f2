"""model.summary(print_fn=...): the Total/Trainable/Non-trainable params lines' numbers."""

import re

import kerasish as keras
from kerasish import layers

model = keras.Sequential([keras.Input(shape=(8, 8, 3)), layers.Conv2D(4, 3), layers.BatchNormalization(),
                          layers.Flatten(), layers.Dense(5), layers.Dense(2)])
model.layers[-1].trainable = False
lines = []
model.summary(print_fn=lambda line, *args, **kwargs: lines.append(line))
text = "\n".join(lines)


def count(label):
    found = re.search(label + r" params: ([\d,]+)", text)
    return int(found.group(1).replace(",", "")) if found else None


RESULT = {"total": count("Total"), "trainable": count("Trainable"),
          "non_trainable": count("Non-trainable"), "count_params": model.count_params()}
