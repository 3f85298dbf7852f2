"""keras.random's draws: shapes, dtypes, moments, ranges and the seed contract (an int
seed repeats, a SeedGenerator advances reproducibly). Values differ from Keras's bits."""

import numpy as np

import kerasish as keras

n = 20000
normal = np.asarray(keras.random.normal((n,), mean=1.0, stddev=2.0, seed=1))
uniform = np.asarray(keras.random.uniform((n,), minval=-1.0, maxval=3.0, seed=2))
trunc = np.asarray(keras.random.truncated_normal((n,), stddev=1.0, seed=3))
ints = np.asarray(keras.random.randint((n,), 2, 7, seed=4))
cats = np.asarray(keras.random.categorical(np.log(np.array([[0.2, 0.8], [0.7, 0.3]])), 4000,
                                           seed=5))
shuffled = np.asarray(keras.random.shuffle(np.arange(10), seed=6))
dropped = np.asarray(keras.random.dropout(keras.ops.ones((n,)), 0.25, seed=7))

gen_a, gen_b = keras.random.SeedGenerator(42), keras.random.SeedGenerator(42)
a1, a2 = (np.asarray(keras.random.normal((8,), seed=gen_a)) for _ in range(2))
b1 = np.asarray(keras.random.normal((8,), seed=gen_b))

RESULT = {
    "shapes": [list(np.shape(v)) for v in (normal, uniform, trunc, ints, cats, shuffled)],
    "dtypes": [str(v.dtype) for v in (normal, uniform, trunc, ints, cats)],
    "float64": str(np.asarray(keras.random.normal((2,), dtype="float64", seed=1)).dtype),
    "normal_moments": [float(normal.mean()), float(normal.std())],
    "uniform_moments": [float(uniform.mean()), float(uniform.var())],
    "uniform_range": [bool(uniform.min() >= -1.0), bool(uniform.max() < 3.0)],
    "trunc_std": float(trunc.std()),
    "trunc_within_2": bool(np.abs(trunc).max() <= 2.0 + 1e-6),
    "int_values": sorted(set(ints.tolist())),
    "int_freq": np.bincount(ints, minlength=7)[2:] / n,
    "cat_freq": [float(cats[0].mean()), float(cats[1].mean())],
    "shuffle_is_permutation": sorted(shuffled.tolist()),
    "dropout_values": sorted({round(float(v), 4) for v in np.unique(dropped)}),
    "dropout_kept": float((dropped > 0).mean()),
    "int_seed_repeats": bool(np.array_equal(keras.random.normal((5,), seed=9),
                                            keras.random.normal((5,), seed=9))),
    "generator_advances": bool(not np.array_equal(a1, a2)),
    "generator_reproducible": bool(np.array_equal(a1, b1)),
    "generator_config": keras.random.SeedGenerator(7, name="sg").get_config(),
}
TOLERANCE = {"rtol": 0.0, "atol": 0.04}
