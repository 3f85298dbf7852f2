"""Fuzzing the file loaders (issues 14, 40): several hundred mutants of a real
full-model .h5, a .weights.h5, a .keras archive, IDX files (gzipped and raw), an
MNIST-style .npz and the tar.gz / zip archives `get_file(extract=True)` unpacks, made
with a fixed seed by truncation, bit flips, byte smears, shape / dtype / attribute /
link mutations, crafted configs and members, hostile archive members and compression
bombs. Every one must load or raise a ValueError/OSError
whose message names the file, within 5 s, and the whole batch, loaded in one
subprocess, must stay under BOUND_MB of peak RSS above that process's baseline (the
model is a few KB, so "4x the model's size + 200 MB" is 200 MB)."""

import gzip
import io
import json
import os
import subprocess
import sys
import zipfile
import zlib

import h5py
import numpy as np
import pytest

import kerasish
from kerasish.datasets import _files, write_idx

from . import _fuzz_archives

SEED = 1234
BOUND_MB = 200
PER_FILE_S = 5.0
N_BYTE_MUTANTS = 40  # per base file and byte-level mutation kind


def _model():
    layers = kerasish.layers
    m = kerasish.Sequential([layers.Input((6,)), layers.Dense(5, name="d0"),
                             layers.Dropout(0.2, name="drop"), layers.Dense(3, name="d1")],
                            name="fuzz")
    m.compile(optimizer="adam", loss="mse")
    m.optimizer.build(m.trainable_weights)
    return m


def _bases(d):
    m = _model()
    h5, weights = os.path.join(d, "base.h5"), os.path.join(d, "base.weights.h5")
    m.save(h5)
    m.save_weights(weights)
    rng = np.random.default_rng(SEED)
    x = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, 6, dtype=np.uint8)
    idx = []
    for stem, arr, gz in zip(_files.IDX_STEMS, (x, y, x[:4], y[:4]), (True, False, True, False)):
        idx.append(os.path.join(d, stem + (".gz" if gz else "")))
        write_idx(idx[-1], arr)
    npz = os.path.join(d, "mnist.npz")
    np.savez_compressed(npz, x_train=x, y_train=y, x_test=x[:4], y_test=y[:4])
    return h5, weights, idx, npz


def _byte_mutants(rng, data):
    """(tag, bytes): truncations, bit flips, smeared runs."""
    n = len(data)
    for i in range(N_BYTE_MUTANTS):
        yield "trunc", data[:int(rng.integers(0, n))]
        b = bytearray(data)
        for pos in rng.integers(0, n, int(rng.integers(1, 9))):
            b[pos] ^= 1 << int(rng.integers(0, 8))
        yield "flip", bytes(b)
        b = bytearray(data)
        start = int(rng.integers(0, n))
        run = rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8).tobytes()
        b[start:start + len(run)] = run[:n - start]
        yield "smear", bytes(b)


def _h5_structural(rng, base, d, count):
    """Copies of an .h5 with one dataset or attribute replaced, or a link added."""
    with h5py.File(base, "r") as f:
        dsets = []
        f.visititems(lambda n, o: dsets.append(n) if isinstance(o, h5py.Dataset) else None)
        groups = []
        f.visititems(lambda n, o: groups.append(n) if isinstance(o, h5py.Group) else None)
    kinds = ["shape", "dtype", "bomb", "chunkbomb", "attr", "softlink", "extlink",
             "scalar", "string"]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        out = os.path.join(d, f"{os.path.basename(base)}.{kind}{i}.h5")
        with open(base, "rb") as src, open(out, "wb") as dst:
            dst.write(src.read())
        name = dsets[int(rng.integers(0, len(dsets)))]
        with h5py.File(out, "a") as f:
            old = f[name]
            shape, parent = old.shape, old.parent
            leaf = name.rsplit("/", 1)[-1]
            if kind in ("shape", "dtype", "bomb", "scalar", "string", "chunkbomb"):
                del f[name]
            if kind == "shape":
                new = tuple(int(s) + int(rng.integers(-1, 3)) for s in shape) or (2,)
                f.create_dataset(name, data=np.ones([max(s, 0) for s in new], np.float32))
            elif kind == "dtype":
                f.create_dataset(name, data=np.ones(shape, rng.choice(["i8", "f8", "u1", "f2"])))
            elif kind == "bomb":
                f.create_dataset(name, shape=(1 << 15, 1 << 15), dtype="f4", chunks=True,
                                 compression="gzip")
            elif kind == "chunkbomb":
                dims = tuple(int(s) for s in shape) or (1,)
                ds = f.create_dataset(name, shape=dims, dtype="f4", chunks=dims,
                                      compression="gzip")
                ds.id.write_direct_chunk((0,) * len(dims), zlib.compress(bytes(1 << 24), 9))
            elif kind == "attr":
                g = f[groups[int(rng.integers(0, len(groups)))]] if groups else f
                target = g if rng.random() < 0.7 else f
                keys = list(target.attrs.keys()) or ["weight_names"]
                junk = [np.arange(5), b"\xff\xfe not utf8", "{broken json", np.float64(np.nan)]
                target.attrs[keys[int(rng.integers(0, len(keys)))]] = junk[int(
                    rng.integers(0, len(junk)))]
            elif kind == "softlink":
                del f[name]
                f[name] = h5py.SoftLink("/" + groups[0] if groups else "/")
            elif kind == "extlink":
                del f[name]
                f[name] = h5py.ExternalLink("/etc/passwd", "/x")
            elif kind == "scalar":
                f.create_dataset(name, data=np.float32(np.nan))
            elif kind == "string":
                parent.create_dataset(leaf, data=np.array([b"abc"] * 3))
        yield out


def _idx_structural(rng, base):
    raw = gzip.decompress(open(base, "rb").read()) if base.endswith(".gz") else \
        open(base, "rb").read()
    ndim = raw[3]
    for i in range(12):
        b = bytearray(raw)
        kind = i % 4
        if kind == 0:
            b[3] = int(rng.integers(0, 9))  # dimension count
        elif kind == 1:
            b[2] = int(rng.choice([0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E, 0x42]))
        elif kind == 2:
            dim = int(rng.integers(0, ndim))
            b[4 + 4 * dim:8 + 4 * dim] = int(rng.choice([0, 1, 2**31, 2**32 - 1,
                                                         2_500_000])).to_bytes(4, "big")
        else:  # a bomb: announce many images over a stream of zeros
            b[4:8] = (100_000).to_bytes(4, "big")
            b += bytes(8 << 20)
        data = bytes(b)
        yield f"hdr{kind}", gzip.compress(data, 1) if base.endswith(".gz") else data


def _npz_structural(rng, base):
    with zipfile.ZipFile(base) as z:
        members = {n: z.read(n) for n in z.namelist()}
    for i in range(12):
        key = list(members)[i % len(members)]
        arr = np.lib.format.read_array(io.BytesIO(members[key]))
        kind = i % 3
        buf = io.BytesIO()
        if kind == 0:  # header shape bomb with little data
            hdr = np.lib.format.header_data_from_array_1_0(arr)
            hdr["shape"] = (10**9,) + arr.shape[1:]
            np.lib.format.write_array_header_1_0(buf, hdr)
            buf.write(bytes(1 << 16))
        elif kind == 1:
            np.lib.format.write_array(buf, arr.astype(rng.choice(["f8", "f4", "i8"])))
        else:
            np.lib.format.write_array(buf, arr.reshape(arr.shape[0], -1)[:, :35])
        out = dict(members, **{key: buf.getvalue()})
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as z:
            for n, v in out.items():
                z.writestr(n, v)
        yield f"npz{kind}", data.getvalue()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("fuzz"))
    rng = np.random.default_rng(SEED)
    h5, weights, idx, npz = _bases(d)
    keras_base = os.path.join(d, "base.keras")
    _model().save(keras_base)
    tgz, zpath = _fuzz_archives.archive_bases(d)
    jobs = [["h5", h5, []], ["weights", weights, []], ["idx", idx[0], ["MUTANT"] + idx[1:]],
            ["npz", npz, []], ["keras", keras_base, []]]

    def add_archive(tag, suffix, data=None, writer=None):
        cache = os.path.join(d, f"x{len(jobs):04d}")
        os.makedirs(os.path.join(cache, "datasets"))
        fname = f"{tag}{suffix}"
        path = os.path.join(cache, "datasets", fname)
        if writer is not None:
            writer(path)
        else:
            with open(path, "wb") as f:
                f.write(data)
        jobs.append(["extract", path, [cache, fname]])

    add_archive("base", ".tar.gz", open(tgz, "rb").read())
    add_archive("base", ".zip", open(zpath, "rb").read())
    n_base = len(jobs)

    def add(kind, base, tag, data, extra=()):
        path = os.path.join(d, f"m{len(jobs):04d}-{tag}-{os.path.basename(base)}")
        with open(path, "wb") as f:
            f.write(data)
        jobs.append([kind, path, list(extra)])

    for kind, base in (("h5", h5), ("weights", weights), ("npz", npz)):
        for tag, data in _byte_mutants(rng, open(base, "rb").read()):
            add(kind, base, tag, data)
    for k, base in enumerate(idx):
        extra = list(idx)
        extra[k] = "MUTANT"
        for tag, data in list(_byte_mutants(rng, open(base, "rb").read()))[:30]:
            add("idx", base, tag, data, extra)
        for tag, data in _idx_structural(rng, base):
            add("idx", base, tag, data, extra)
    for tag, data in _npz_structural(rng, npz):
        add("npz", npz, tag, data)
    for kind, base in (("h5", h5), ("weights", weights)):
        for path in _h5_structural(rng, base, d, 45):
            jobs.append([kind, path, []])
    for tag, data in _byte_mutants(rng, open(keras_base, "rb").read()):
        add("keras", keras_base, tag, data)
    for _, path in _fuzz_archives.keras_structural(keras_base, d):
        jobs.append(["keras", path, []])
    keras_weights = os.path.join(d, "keras_inner.weights.h5")
    with zipfile.ZipFile(keras_base) as z:
        open(keras_weights, "wb").write(z.read("model.weights.h5"))
    for i, path in enumerate(_h5_structural(rng, keras_weights, d, 18)):
        jobs.append(["keras", _fuzz_archives.rewrite_keras(
            keras_base, os.path.join(d, f"kw{i:02d}.keras"),
            weights=open(path, "rb").read()), []])
    for base, suffix in ((tgz, ".tar.gz"), (zpath, ".zip")):
        for tag, data in list(_byte_mutants(rng, open(base, "rb").read()))[:45]:
            add_archive(tag, suffix, data)
    for tag, suffix, writer in _fuzz_archives.archive_structural():
        add_archive(tag, suffix, writer=writer)
    listing = os.path.join(d, "jobs.json")
    with open(listing, "w") as f:
        json.dump(jobs, f)
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
               KERASISH_DEVICE="cpu")
    proc = subprocess.run([sys.executable, os.path.join(here, "_fuzz_loader.py"), listing,
                           str(n_base)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    out["count"] = len(jobs) - n_base
    out["outside"] = [p for p in os.listdir(os.path.dirname(d)) if "evil" in p or p == "x"]
    return out


def test_several_hundred_mutants(report):
    assert report["count"] >= 300 and len(report["results"]) == report["count"]
    kinds = {}
    for _, _, kind, *_ in report["results"]:
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"\nfuzz: {report['count']} mutants, outcomes {kinds}, slowest "
          f"{max(r[1] for r in report['results']):.3f} s, peak RSS "
          f"{report['peak_mb']:.0f} MB (baseline {report['baseline_mb']:.0f} MB)")


def test_every_mutant_loads_or_names_the_file(report):
    bad = [(os.path.basename(p), kind, msg[:200]) for p, _, kind, msg, *clear in
           report["results"] if kind != "ok" and not (clear[0] and p in msg)]
    assert bad == [], f"{len(bad)} unclear errors, first: {bad[:5]}"


def test_every_mutant_is_handled_quickly(report):
    slow = [(os.path.basename(p), round(t, 2)) for p, t, *_ in report["results"]
            if t > PER_FILE_S]
    assert slow == []


def test_no_archive_wrote_outside_its_target(report):
    assert report["outside"] == []
    assert not os.path.exists("/tmp/kerasish-fuzz-evil")
    assert not any("pwned" in p for p in os.listdir(os.path.dirname(__file__)))


def test_peak_memory_is_bounded(report):
    grown = report["peak_mb"] - report["baseline_mb"]
    assert grown < BOUND_MB, (f"peak RSS {report['peak_mb']:.0f} MB, baseline "
                              f"{report['baseline_mb']:.0f} MB")
