"""keras-io's character-level seq2seq: the encoder LSTM's states passed to the decoder
LSTM's call as initial_state=, then a softmax Dense; predictions and two epochs of training."""

import numpy as np

import kerasish as keras

rng = np.random.default_rng(3)
num_encoder_tokens, num_decoder_tokens, latent_dim = 5, 6, 4

encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
encoder = keras.layers.LSTM(latent_dim, return_state=True)
encoder_outputs, state_h, state_c = encoder(encoder_inputs)
encoder_states = [state_h, state_c]

decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))
decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
decoder_outputs = decoder_dense(decoder_outputs)
model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)
model.set_weights([rng.standard_normal(w.shape).astype("float32") * 0.4
                   for w in model.get_weights()])

enc = rng.standard_normal((8, 4, num_encoder_tokens)).astype("float32")
dec = rng.standard_normal((8, 3, num_decoder_tokens)).astype("float32")
target = np.eye(num_decoder_tokens, dtype="float32")[rng.integers(0, num_decoder_tokens, (8, 3))]
model.compile(optimizer=keras.optimizers.SGD(0.2), loss="categorical_crossentropy")
before = model.predict([enc, dec], verbose=0)
history = model.fit([enc, dec], target, batch_size=4, epochs=2, shuffle=False, verbose=0)

state_model = keras.Model(encoder_inputs, encoder_states)
RESULT = {
    "predict": before,
    "loss": history.history["loss"],
    "weights": model.get_weights(),
    "states": state_model.predict(enc, verbose=0),
    "params": model.count_params(),
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
