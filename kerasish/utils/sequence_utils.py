"""pad_sequences: Keras's list-of-sequences -> (num_samples, maxlen) array."""

import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pads (or truncates) each sequence to maxlen, as keras.utils.pad_sequences.

    padding/truncating "pre" act at the start, "post" at the end; maxlen None = longest.
    """
    for arg, v in (("padding", padding), ("truncating", truncating)):
        if v not in ("pre", "post"):
            raise ValueError(f"pad_sequences: {arg} must be 'pre' or 'post'; received {v!r}")
    if not hasattr(sequences, "__len__"):
        raise ValueError("pad_sequences: `sequences` must be iterable.")
    lengths, sample_shape = [], ()
    for x in sequences:
        try:
            lengths.append(len(x))
        except TypeError as exc:
            raise ValueError("pad_sequences: `sequences` must be a list of iterables. Found "
                             f"non-iterable: {x!r}") from exc
        if len(x) and not sample_shape:
            sample_shape = np.asarray(x).shape[1:]
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    is_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.object_)
    if isinstance(value, str) and dtype is not object and not is_str:
        raise ValueError(f"pad_sequences: dtype {dtype} is not compatible with the padding "
                         f"value {value!r}; use dtype=object for strings")
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s) or maxlen == 0:
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"pad_sequences: shape of sample {trunc.shape[1:]} of sequence at "
                             f"position {i} is different from expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(trunc)] = trunc
        else:
            out[i, -len(trunc):] = trunc
    return out
