"""utils.pad_sequences: padding/truncating pre and post, maxlen, value, dtype."""

import kerasish as keras

seqs = [[1, 2, 3, 4, 5], [6, 7], [8], []]
pad = keras.utils.pad_sequences
RESULT = {
    "default": pad(seqs),
    "post": pad(seqs, padding="post"),
    "maxlen_pre": pad(seqs, maxlen=3),
    "maxlen_post_trunc": pad(seqs, maxlen=3, truncating="post"),
    "value": pad(seqs, maxlen=4, value=-1),
    "float": pad([[0.5, 1.5], [2.5]], dtype="float32", padding="post"),
    "dtype": str(pad(seqs).dtype),
}
