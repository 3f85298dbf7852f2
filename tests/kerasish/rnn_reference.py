"""float64 NumPy references for the recurrent layers (Keras semantics: masks carry the state, go_backwards reads steps in reverse and emits them in that order)."""
import numpy as np

def _sig(v): return 1 / (1 + np.exp(-v))
ACT = {"tanh": np.tanh, "sigmoid": _sig, "relu": lambda v: np.maximum(v, 0), "linear": lambda v: v,
       "hard_sigmoid": lambda v: np.clip(v / 6 + 0.5, 0, 1)}

def rnn_ref(kind, x, K, R, b, *, mask=None, go_backwards=False, h0=None, c0=None,
            act="tanh", ract="sigmoid", xmask=None, rmask=None):
    """Returns (seq (N,T,U), h_T, c_T)."""
    x = np.asarray(x, np.float64)
    n, t, f = x.shape
    u = R.shape[0]
    a, r = ACT[act], ACT[ract]
    h = np.zeros((n, u)) if h0 is None else np.asarray(h0, np.float64)
    c = np.zeros((n, u)) if c0 is None else np.asarray(c0, np.float64)
    order = range(t - 1, -1, -1) if go_backwards else range(t)
    seq = []
    for col in order:
        xt = x[:, col]
        if xmask is not None: xt = xt * xmask
        hp = h if rmask is None else h * rmask
        if kind == "lstm":
            z = xt @ K + hp @ R + (0 if b is None else b)
            i, fg, g, o = np.split(z, 4, axis=1)
            i, fg, g, o = r(i), r(fg), a(g), r(o)
            cn = fg * c + i * g
            hn = o * a(cn)
        elif kind == "gru":
            xz = xt @ K + (0 if b is None else b[0])
            hz = hp @ R + (0 if b is None else b[1])
            z = r(xz[:, :u] + hz[:, :u]); rr = r(xz[:, u:2*u] + hz[:, u:2*u])
            hh = a(xz[:, 2*u:] + rr * hz[:, 2*u:])
            hn = z * h + (1 - z) * hh; cn = c
        else:
            hn = a(xt @ K + hp @ R + (0 if b is None else b)); cn = c
        if mask is not None:
            m = (mask[:, col] != 0)[:, None]
            hn = np.where(m, hn, h); cn = np.where(m, cn, c)
        h, c = hn, cn
        seq.append(h)
    return np.stack(seq, 1), h, c
