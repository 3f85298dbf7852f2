"""get_file against a local http.server: caching, hashes, retries, atomicity."""

import hashlib
import http.server
import io
import os
import tarfile
import threading

import pytest

from kerasish.utils import file_utils
from kerasish.utils.file_utils import DownloadError, get_file

PAYLOAD = bytes(range(256)) * 400 + b"tail"  # > one 64 KiB read chunk
SHA256 = hashlib.sha256(PAYLOAD).hexdigest()
MD5 = hashlib.md5(PAYLOAD).hexdigest()  # noqa: S324 (checksum, not security)


def _tarball():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("inner/hello.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    return buf.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    counts = {}
    flaky_left = {}

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, body, length=None, code=200):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path
        self.counts[path] = self.counts.get(path, 0) + 1
        if path == "/good.bin":
            self._send(PAYLOAD)
        elif path == "/truncated.bin":  # announces everything, sends half, hangs up
            self._send(PAYLOAD[: len(PAYLOAD) // 2], length=len(PAYLOAD))
            self.close_connection = True
        elif path == "/flaky.bin":  # 503 twice, then the file
            left = self.flaky_left.get(path, 2)
            self.flaky_left[path] = left - 1
            if left > 0:
                self._send(b"busy", code=503)
            else:
                self._send(PAYLOAD)
        elif path == "/archive.tar.gz":
            self._send(_tarball())
        else:
            self._send(b"no", code=404)


@pytest.fixture(scope="module")
def _httpd():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def server(_httpd, monkeypatch):
    """(base URL, per-path request counts) with retries made instant."""
    monkeypatch.setattr(file_utils, "_RETRY_DELAYS", (0.0, 0.0))
    _Handler.counts.clear()
    _Handler.flaky_left.clear()
    return _httpd, _Handler.counts


def _cache_files(cache):
    return sorted(os.path.relpath(os.path.join(d, f), cache)
                  for d, _, fs in os.walk(cache) for f in fs)


def test_good_file_sha256_and_md5_then_cached(server, tmp_path):
    base, counts = server
    p = get_file("good.bin", base + "/good.bin", file_hash=SHA256, cache_dir=tmp_path)
    assert p == os.path.join(tmp_path, "datasets", "good.bin")
    with open(p, "rb") as f:
        assert f.read() == PAYLOAD
    # cached and valid: no second request, also under an md5 check
    assert get_file("good.bin", base + "/good.bin", file_hash=MD5, cache_dir=tmp_path) == p
    assert counts["/good.bin"] == 1
    assert _cache_files(tmp_path) == [os.path.join("datasets", "good.bin")]


def test_fname_from_url_and_nested_subdir(server, tmp_path):
    base, _ = server
    p = get_file(origin=base + "/good.bin", cache_dir=tmp_path, cache_subdir="datasets/x")
    assert p == os.path.join(tmp_path, "datasets", "x", "good.bin")


def test_wrong_hash_leaves_nothing(server, tmp_path):
    base, _ = server
    with pytest.raises(ValueError, match="does not match") as e:
        get_file("good.bin", base + "/good.bin", file_hash="0" * 64, cache_dir=tmp_path)
    assert "sha256" in str(e.value) and base in str(e.value)
    assert _cache_files(tmp_path) == []


def test_stale_cached_file_is_replaced(server, tmp_path):
    base, counts = server
    stale = tmp_path / "datasets" / "good.bin"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old partial")
    p = get_file("good.bin", base + "/good.bin", file_hash=SHA256, cache_dir=tmp_path)
    assert open(p, "rb").read() == PAYLOAD and counts["/good.bin"] == 1


def test_truncated_response_is_retried_then_fails_leaving_nothing(server, tmp_path):
    base, counts = server
    with pytest.raises(DownloadError, match="truncated.bin") as e:
        get_file("t.bin", base + "/truncated.bin", cache_dir=tmp_path)
    assert "3 attempt(s)" in str(e.value) and "closed early" in str(e.value)
    assert counts["/truncated.bin"] == 3
    assert _cache_files(tmp_path) == []
    assert isinstance(e.value, OSError)


def test_transient_503_is_retried(server, tmp_path):
    base, counts = server
    p = get_file("f.bin", base + "/flaky.bin", file_hash=SHA256, cache_dir=tmp_path)
    assert open(p, "rb").read() == PAYLOAD and counts["/flaky.bin"] == 3


def test_404_is_not_retried(server, tmp_path):
    base, counts = server
    with pytest.raises(DownloadError, match="HTTP 404"):
        get_file("m.bin", base + "/missing.bin", cache_dir=tmp_path)
    assert counts["/missing.bin"] == 1
    assert _cache_files(tmp_path) == []


def test_unreachable_server_gives_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(file_utils, "_RETRY_DELAYS", ())
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/x.bin"
    with pytest.raises(DownloadError, match="could not download 'x.bin'") as e:
        get_file("x.bin", url, cache_dir=tmp_path)
    assert url in str(e.value)


def test_interrupted_download_leaves_nothing(tmp_path, monkeypatch):
    def fetch(origin, tmp, desc):
        with open(tmp, "wb") as f:
            f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(file_utils, "_fetch", fetch)
    with pytest.raises(KeyboardInterrupt):
        get_file("k.bin", "http://127.0.0.1:9/k.bin", cache_dir=tmp_path)
    assert _cache_files(tmp_path) == []


def test_extract_tarball(server, tmp_path):
    base, _ = server
    d = get_file("archive.tar.gz", base + "/archive.tar.gz", cache_dir=tmp_path, extract=True)
    assert d == os.path.join(tmp_path, "datasets", "archive")
    assert open(os.path.join(d, "inner", "hello.txt"), "rb").read() == b"hello"


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="hash_algorithm"):
        get_file("a", "http://127.0.0.1:9/a", file_hash="ab", hash_algorithm="sha1",
                 cache_dir=tmp_path)
    with pytest.raises(ValueError, match="origin"):
        get_file("a", None, cache_dir=tmp_path)


@pytest.mark.parametrize("kwargs", [
    {"fname": "../../x"}, {"fname": "a/b"}, {"fname": ".."},
    {"fname": "x", "cache_subdir": "../.."}, {"fname": "x", "cache_subdir": "d/../../e"},
])
def test_paths_escaping_the_cache_are_refused(tmp_path, kwargs):
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="fname|cache_subdir"):
        get_file(origin="http://127.0.0.1:9/x", cache_dir=cache, **kwargs)
    assert list(tmp_path.iterdir()) == []  # nothing created anywhere


def test_absolute_cache_subdir_is_used_as_in_keras(server, tmp_path):
    base, _ = server
    target = tmp_path / "elsewhere"
    p = get_file("g.bin", base + "/good.bin", cache_dir=tmp_path / "c", cache_subdir=target)
    assert p == os.path.join(target, "g.bin") and open(p, "rb").read() == PAYLOAD


@pytest.mark.parametrize("url_tail", ["file:///nonexistent-kerasish/x.bin", "file:///",
                                      "foo://host/x.bin"])
def test_permanent_errors_are_not_retried(tmp_path, monkeypatch, url_tail):
    calls = []
    real = file_utils._fetch

    def counting(origin, tmp, desc):
        calls.append(origin)
        return real(origin, tmp, desc)

    monkeypatch.setattr(file_utils, "_fetch", counting)
    monkeypatch.setattr(file_utils, "_RETRY_DELAYS", (0.0, 0.0))
    with pytest.raises(DownloadError, match=r"1 attempt\(s\)"):
        get_file("x.bin", url_tail, cache_dir=tmp_path)
    assert len(calls) == 1 and _cache_files(tmp_path) == []


def test_transient_classification():
    import errno
    import socket
    import urllib.error
    assert file_utils._is_transient(urllib.error.URLError(ConnectionResetError()))
    assert file_utils._is_transient(urllib.error.URLError(socket.timeout()))
    assert file_utils._is_transient(TimeoutError())
    assert not file_utils._is_transient(urllib.error.URLError(socket.gaierror()))
    assert not file_utils._is_transient(OSError(errno.ENOSPC, "full"))
    assert not file_utils._is_transient(urllib.error.URLError("unknown url type: foo"))


def test_downloaded_file_mode_follows_the_umask(server, tmp_path):
    base, _ = server
    old = os.umask(0o022)
    try:
        p = get_file("m.bin", base + "/good.bin", cache_dir=tmp_path)
        d = get_file("archive.tar.gz", base + "/archive.tar.gz", cache_dir=tmp_path,
                     extract=True)
    finally:
        os.umask(old)
    assert os.stat(p).st_mode & 0o777 == 0o644
    assert os.stat(d).st_mode & 0o777 == 0o755
