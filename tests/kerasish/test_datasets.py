"""kerasish.datasets: IDX parsing, .npz loading, the search order and its error, the
download fallback (local http.server), and the real data sets when present."""

import functools
import gzip
import hashlib
import http.server
import os
import threading

import numpy as np
import pytest

from kerasish.datasets import DatasetNotFoundError, fashion_mnist, mnist, read_idx, write_idx
from kerasish.datasets._files import IDX_STEMS
from kerasish.utils import file_utils

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MNIST_SMALL = os.path.join(REPO, "..", "shared", "datasets", "mnist-small")
DEBIAN_FASHION = "/usr/share/datasets/fashion-mnist"


def _splits(seed, n_train=7, n_test=5, hw=(28, 28)):
    rng = np.random.default_rng(seed)
    return ((rng.integers(0, 256, (n_train, *hw), dtype=np.uint8),
             rng.integers(0, 10, n_train, dtype=np.uint8)),
            (rng.integers(0, 256, (n_test, *hw), dtype=np.uint8),
             rng.integers(0, 10, n_test, dtype=np.uint8)))


def _write_idx_dir(d, splits, gz=True):
    os.makedirs(d, exist_ok=True)
    (xa, ya), (xb, yb) = splits
    for stem, arr in zip(IDX_STEMS, (xa, ya, xb, yb)):
        write_idx(os.path.join(d, stem + (".gz" if gz else "")), arr)
    return d


def _write_npz(path, splits):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    (xa, ya), (xb, yb) = splits
    np.savez(path, x_train=xa, y_train=ya, x_test=xb, y_test=yb)
    return path


def _assert_same(got, want):
    for g, w in zip((*got[0], *got[1]), (*want[0], *want[1])):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# ---- IDX files

@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
@pytest.mark.parametrize("gz", [False, True])
def test_idx_roundtrip(tmp_path, dtype, gz):
    a = (np.arange(2 * 3 * 5) - 7).astype(dtype).reshape(2, 3, 5)
    p = tmp_path / ("a.idx.gz" if gz else "a.idx")
    write_idx(p, a)
    assert (p.read_bytes()[:2] == b"\x1f\x8b") == gz
    b = read_idx(p)
    assert b.dtype == np.dtype(dtype) and b.dtype.isnative and b.flags.writeable
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(read_idx(_write(tmp_path / "l", np.arange(1, dtype=dtype))),
                                  np.arange(1, dtype=dtype))


def _write(p, a, compress=False):
    write_idx(p, a, compress=compress)
    return p


def _corrupt(tmp_path, name, data, gz=False):
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


GOOD = bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 5]) + bytes(30)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("data, msg", [
    (b"PK\x03\x04" + GOOD[4:], "bad magic"),
    (bytes([0, 0, 0x42, 3]) + GOOD[4:], "bad magic"),
    (bytes([0, 0, 8, 0]) + GOOD[4:], "0 dimensions"),
    (GOOD[:10], "truncated"),
    (GOOD[:-1], "truncated"),
    (GOOD + b"\x00", "more data"),
    (b"", "truncated"),
])
def test_idx_corrupt_files_name_the_file(tmp_path, gz, data, msg):
    p = _corrupt(tmp_path, "bad-idx3-ubyte", data, gz)
    assert read_idx(_corrupt(tmp_path, "ok", GOOD, gz)).shape == (2, 3, 5)
    with pytest.raises(ValueError, match=msg) as e:
        read_idx(p)
    assert str(p) in str(e.value)


def test_idx_truncated_gzip_stream(tmp_path):
    blob = gzip.compress(GOOD + bytes(1000))
    p = _corrupt(tmp_path, "cut.gz", blob[: len(blob) // 2])
    with pytest.raises(ValueError, match="gzip") as e:
        read_idx(p)
    assert str(p) in str(e.value)


# ---- path=

@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("module", [mnist, fashion_mnist])
def test_load_from_idx_dir(tmp_path, module, gz):
    want = _splits(1)
    _assert_same(module.load_data(path=_write_idx_dir(tmp_path / "d", want, gz)), want)


def test_load_from_npz_file_and_dir(tmp_path):
    want = _splits(2, n_train=1, n_test=3)
    p = _write_npz(str(tmp_path / "any" / "mnist.npz"), want)
    _assert_same(mnist.load_data(path=p), want)
    _assert_same(mnist.load_data(path=os.path.dirname(p)), want)


def test_load_mixed_gz_and_raw(tmp_path):
    want = _splits(3)
    d = _write_idx_dir(tmp_path / "d", want, gz=True)
    os.remove(os.path.join(d, "t10k-labels-idx1-ubyte.gz"))
    write_idx(os.path.join(d, "t10k-labels-idx1-ubyte"), want[1][1])
    _assert_same(mnist.load_data(path=d), want)


def test_inconsistent_counts_and_labels(tmp_path):
    (xa, ya), test = _splits(4)
    d = _write_idx_dir(tmp_path / "d", ((xa, ya[:-1]), test))
    with pytest.raises(ValueError, match="7 images but y_train has 6 labels"):
        mnist.load_data(path=d)
    p = _write_npz(str(tmp_path / "n" / "m.npz"), ((xa, np.full_like(ya, 10)), test))
    with pytest.raises(ValueError, match=r"\[0, 10\)"):
        mnist.load_data(path=p)


def test_bad_npz_files(tmp_path):
    (xa, ya), (xb, yb) = _splits(5)
    p = tmp_path / "k.npz"
    np.savez(p, x_train=xa, y_train=ya, x_test=xb)
    with pytest.raises(ValueError, match="y_test") as e:
        mnist.load_data(path=p)
    assert str(p) in str(e.value)
    q = tmp_path / "cut.npz"
    _write_npz(str(q), _splits(5))
    q.write_bytes(q.read_bytes()[:100])
    with pytest.raises(ValueError, match="cut.npz"):
        mnist.load_data(path=q)


def test_missing_or_partial_path_is_not_found(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="nowhere: not found"):
        mnist.load_data(path=tmp_path / "nowhere")
    d = _write_idx_dir(tmp_path / "d", _splits(6))
    os.remove(os.path.join(d, "train-labels-idx1-ubyte.gz"))
    with pytest.raises(DatasetNotFoundError, match="missing train-labels-idx1-ubyte"):
        fashion_mnist.load_data(path=d)


# ---- search order, download, offline error

@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Empty HOME and KERASISH_DATA_DIR, downloads pointed at a closed port."""
    home, env = tmp_path / "home", tmp_path / "env"
    home.mkdir()
    env.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KERASISH_DATA_DIR", str(env))
    monkeypatch.setattr(file_utils, "_RETRY_DELAYS", ())
    dead = "http://127.0.0.1:9/"  # discard port: connection refused
    monkeypatch.setattr(mnist, "ORIGIN", dead + "mnist.npz")
    monkeypatch.setattr(fashion_mnist, "MIRRORS", (dead,))
    monkeypatch.setattr(fashion_mnist, "DEBIAN_DIR", str(tmp_path / "debian"))
    return home, env, tmp_path / "debian"


def test_mnist_search_order(isolated):
    home, env, _ = isolated
    a, b, c = _splits(10), _splits(11), _splits(12)
    _write_idx_dir(env / "mnist", a)
    _write_npz(str(home / ".kerasish" / "datasets" / "mnist" / "mnist.npz"), b)
    _write_npz(str(home / ".keras" / "datasets" / "mnist.npz"), c)
    _assert_same(mnist.load_data(), a)
    os.rename(env / "mnist", env / "moved")
    _assert_same(mnist.load_data(), b)
    os.remove(home / ".kerasish" / "datasets" / "mnist" / "mnist.npz")
    _assert_same(mnist.load_data(), c)


def test_fashion_search_order(isolated):
    home, env, debian = isolated
    a, b, c, d = (_splits(s) for s in (20, 21, 22, 23))
    _write_idx_dir(debian, d, gz=True)
    _assert_same(fashion_mnist.load_data(), d)
    _write_idx_dir(home / ".keras" / "datasets" / "fashion-mnist", c)
    _assert_same(fashion_mnist.load_data(), c)
    _write_idx_dir(home / ".kerasish" / "datasets" / "fashion_mnist", b, gz=False)
    _assert_same(fashion_mnist.load_data(), b)
    _write_idx_dir(env / "fashion-mnist", a)
    _assert_same(fashion_mnist.load_data(), a)


@pytest.mark.parametrize("module, name", [(mnist, "mnist"), (fashion_mnist, "fashion_mnist")])
def test_offline_error_lists_every_place(isolated, module, name):
    home, env, debian = isolated
    os.makedirs(env / name)  # exists but empty: reported as such
    with pytest.raises(DatasetNotFoundError) as e:
        module.load_data()
    msg = str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    assert e.value.__context__ is None  # no urllib traceback chained underneath
    places = [str(env / name), str(home / ".kerasish" / "datasets" / name), "download"]
    if module is mnist:
        places.insert(2, str(home / ".keras" / "datasets" / "mnist.npz"))
    else:
        places[2:2] = [str(home / ".keras" / "datasets" / "fashion-mnist"), str(debian)]
        places.insert(1, str(env / "fashion-mnist"))
    lines = msg.splitlines()
    for i, place in enumerate(places):
        assert any(ln.startswith(f"  {i + 1}. {place}") for ln in lines), (place, msg)
    assert "no " in msg and "IDX files in it" in msg and "127.0.0.1:9" in msg
    assert "path=" in msg and "KERASISH_DATA_DIR" in msg and "datasets/README.md" in msg
    assert ("dataset-fashion-mnist" in msg) == (module is fashion_mnist)


def test_offline_error_without_env(isolated, monkeypatch):
    monkeypatch.delenv("KERASISH_DATA_DIR")
    with pytest.raises(DatasetNotFoundError, match="KERASISH_DATA_DIR is not set"):
        mnist.load_data()


@pytest.fixture
def file_server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    t.join(5)


def test_mnist_download_then_cache(isolated, file_server, monkeypatch):
    home, _, _ = isolated
    root, base = file_server
    want = _splits(30)
    npz = _write_npz(str(root / "mnist.npz"), want)
    sha = hashlib.sha256(open(npz, "rb").read()).hexdigest()
    monkeypatch.setattr(mnist, "ORIGIN", base + "mnist.npz")
    monkeypatch.setattr(mnist, "SHA256", "f" * 64)
    with pytest.raises(DatasetNotFoundError, match="does not match"):
        mnist.load_data()
    cached = home / ".kerasish" / "datasets" / "mnist" / "mnist.npz"
    assert not cached.exists() and os.listdir(cached.parent) == []
    monkeypatch.setattr(mnist, "SHA256", sha)
    _assert_same(mnist.load_data(), want)
    assert cached.is_file()
    os.remove(npz)  # now served from the cache
    _assert_same(mnist.load_data(), want)


def test_fashion_download_from_second_mirror(isolated, file_server, monkeypatch):
    home, _, _ = isolated
    root, base = file_server
    want = _splits(31)
    _write_idx_dir(root, want, gz=True)
    files = [(s + ".gz", hashlib.md5((root / (s + ".gz")).read_bytes()).hexdigest())  # noqa: S324
             for s in IDX_STEMS]
    monkeypatch.setattr(fashion_mnist, "FILES", files)
    monkeypatch.setattr(fashion_mnist, "MIRRORS", ("http://127.0.0.1:9/", base))
    _assert_same(fashion_mnist.load_data(), want)
    got = sorted(os.listdir(home / ".kerasish" / "datasets" / "fashion_mnist"))
    assert got == sorted(f for f, _ in files)


# ---- the real data sets, when this machine has them

def test_fashion_mnist_debian_package(isolated, monkeypatch):
    if not os.path.isdir(DEBIAN_FASHION):
        pytest.skip(f"{DEBIAN_FASHION} absent (apt-get install dataset-fashion-mnist)")
    monkeypatch.setattr(fashion_mnist, "DEBIAN_DIR", DEBIAN_FASHION)
    (xa, ya), (xb, yb) = fashion_mnist.load_data()
    assert xa.shape == (60000, 28, 28) and ya.shape == (60000,)
    assert xb.shape == (10000, 28, 28) and yb.shape == (10000,)
    assert xa.dtype == ya.dtype == np.uint8
    assert np.bincount(ya).tolist() == [6000] * 10 and np.bincount(yb).tolist() == [1000] * 10
    assert ya[:5].tolist() == [9, 0, 0, 3, 0]  # the published first training labels


def test_mnist_small_via_path():
    if not os.path.isdir(MNIST_SMALL):
        pytest.skip(f"{os.path.normpath(MNIST_SMALL)} absent (see datasets/README.md)")
    (xa, ya), (xb, yb) = mnist.load_data(path=MNIST_SMALL)
    assert xa.shape == (5000, 28, 28) and ya.shape == (5000,)
    assert xb.shape == (10000, 28, 28) and yb.shape == (10000,)
    assert np.bincount(ya).tolist() == [500] * 10
    assert yb[:5].tolist() == [7, 2, 1, 0, 4]  # the official test set's first labels


# ---- untrusted files: shapes, dtypes and sizes checked before data is read

def _idx_header(code, dims):
    import struct
    return bytes([0, 0, code, len(dims)]) + struct.pack(f">{len(dims)}I", *dims)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("header, msg", [
    (_idx_header(8, (1, 1, 1, 1, 1)), "5 dimensions"),
    (_idx_header(8, (2**32 - 1,) * 4), "over the limit"),  # overflows int64: no wrap
    (_idx_header(0x0E, (2**31, 3)), "over the limit"),
])
def test_idx_impossible_headers(tmp_path, gz, header, msg):
    p = _corrupt(tmp_path, "h-idx3-ubyte", header + bytes(64), gz)
    with pytest.raises(ValueError, match=msg) as e:
        read_idx(p)
    assert str(p) in str(e.value)


def test_idx_gzip_bomb_is_refused_before_inflating(tmp_path):
    """1.8 MB of gzip announcing 2.5M images (1.96 GB): refused from its header; one
    announcing 100k images over 96 MB of zeros stops after the announced 78 MB."""
    import resource
    zeros = bytes(1 << 24)
    for n, msg in ((2_500_000, "over the limit"), (100_000, "more data")):
        p = tmp_path / f"bomb{n}.gz"
        with gzip.open(p, "wb", compresslevel=1) as f:
            f.write(_idx_header(8, (n, 28, 28)))
            for _ in range(6):  # 96 MB of zeros, more than the 78 MB announced
                f.write(zeros)
        d = _bomb_dir(tmp_path, p)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(ValueError, match=msg) as e:
            mnist.load_data(path=d)
        assert str(d / "train-images-idx3-ubyte.gz") in str(e.value)
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        assert grown_mb < 400, grown_mb


def _bomb_dir(tmp_path, images):
    d = tmp_path / f"d-{images.name}"
    _write_idx_dir(d, _splits(0))
    os.replace(images, d / "train-images-idx3-ubyte.gz")
    return d


@pytest.mark.parametrize("bad, msg", [
    (lambda s: ((s[0][0][:, :5, :7].copy(), s[0][1]), s[1]), r"\(N, 28, 28\)"),
    (lambda s: ((s[0][0].astype(np.float64), s[0][1]), s[1]), "dtype uint8"),
    (lambda s: ((s[0][0], np.full(7, np.nan)), s[1]), "integer labels"),
    (lambda s: ((s[0][0], s[0][1][:, None]), s[1]), r"\(N,\)"),
])
def test_npz_with_wrong_shapes_or_dtypes_is_refused(tmp_path, bad, msg):
    p = _write_npz(str(tmp_path / "m" / "mnist.npz"), bad(_splits(5)))
    with pytest.raises(ValueError, match=msg) as e:
        mnist.load_data(path=p)
    assert p in str(e.value)


@pytest.mark.parametrize("gz", [False, True])
def test_idx_with_wrong_item_shape_or_dtype_is_refused(tmp_path, gz):
    want = _splits(6)
    d = _write_idx_dir(tmp_path / "d", want, gz)
    p = os.path.join(d, "t10k-images-idx3-ubyte" + (".gz" if gz else ""))
    write_idx(p, np.zeros((5, 5, 7), np.uint8))
    with pytest.raises(ValueError, match=r"items of shape \(28, 28\)") as e:
        fashion_mnist.load_data(path=d)
    assert p in str(e.value)
    write_idx(p, np.zeros((5, 28, 28), np.float32))
    with pytest.raises(ValueError, match="expected uint8") as e:
        fashion_mnist.load_data(path=d)
    assert p in str(e.value)


def test_npz_labels_come_back_uint8_and_bombs_are_refused(tmp_path):
    (xa, ya), (xb, yb) = _splits(7)
    p = _write_npz(str(tmp_path / "a" / "mnist.npz"), ((xa, ya.astype(np.int64)), (xb, yb)))
    (_, y), _ = mnist.load_data(path=p)
    assert y.dtype == np.uint8
    # A compressed member whose header declares 10**9 images: refused from the header.
    q = str(tmp_path / "b" / "mnist.npz")
    os.makedirs(os.path.dirname(q))
    import io
    import zipfile
    with zipfile.ZipFile(q, "w", zipfile.ZIP_DEFLATED) as z:
        for key, arr in zip(("x_train", "y_train", "x_test", "y_test"), (xa, ya, xb, yb)):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr)
            data = buf.getvalue()
            if key == "x_train":
                hdr = np.lib.format.header_data_from_array_1_0(arr)
                hdr["shape"] = (10**9, 28, 28)
                head = io.BytesIO()
                np.lib.format.write_array_header_1_0(head, hdr)
                data = head.getvalue() + bytes(1 << 20)
            z.writestr(key + ".npy", data)
    with pytest.raises(ValueError, match="over the limit") as e:
        mnist.load_data(path=q)
    assert q in str(e.value)
