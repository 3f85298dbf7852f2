"""count_params() of layers and models: RNNs, Bidirectional, Embedding, MHA, convs, nested."""

import kerasish as keras
from kerasish import layers

inp = keras.Input(shape=(6,))
x = layers.Embedding(40, 8)(inp)
x = layers.Bidirectional(layers.LSTM(5, return_sequences=True))(x)
x = layers.GRU(4, return_sequences=True)(x)
x = layers.MultiHeadAttention(num_heads=2, key_dim=3)(x, x)
x = layers.SimpleRNN(3)(x)
model = keras.Model(inp, layers.Dense(2)(x))
img = keras.Input(shape=(9, 9, 3))
y = layers.SeparableConv2D(4, 3)(img)
y = layers.DepthwiseConv2D(3)(y)
y = layers.Conv2DTranspose(2, 3)(y)
cnn = keras.Model(img, layers.GlobalAveragePooling2D()(y))
RESULT = {"text": model.count_params(), "per_layer": [l.count_params() for l in model.layers],
          "cnn": cnn.count_params(), "cnn_layers": [l.count_params() for l in cnn.layers]}
