"""Issue 40 items 2 and 9: `get_file(extract=True)` on crafted archives (made here)
writes nothing outside its target, refuses links by default and escaping links always
(the CVE-2025-4517 class: a chain of long symlinks that `tarfile`'s data filter
resolves differently from the kernel), refuses devices, and bounds the extracted size
and the compression ratio. A refused archive leaves no target and no temporary dir."""

import io
import os
import tarfile
import zipfile

import pytest

from kerasish.utils import file_utils, stale_temps
from kerasish.utils.archive_extract import ExtractLimits
from kerasish.utils.file_utils import get_file

ORIGIN = "http://127.0.0.1:9/"  # never reached: the archive is already in the cache


def _cache(tmp_path):
    d = tmp_path / "cache" / "datasets"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _tar(path, members, mode="w:gz"):
    """members: (name, kind, payload): kind file (bytes), dir, sym / hard (target),
    chr (a device)."""
    with tarfile.open(path, mode) as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                info.size, data = len(payload), io.BytesIO(payload)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
            elif kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, payload
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, payload
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            tar.addfile(info, data)
    return path


def _extract(tmp_path, name, **kwargs):
    return get_file(name, ORIGIN + name, cache_dir=tmp_path / "cache", extract=True,
                    **kwargs)


def _left_behind(tmp_path, name):
    base = name.split(".")[0]
    return sorted(e for e in os.listdir(_cache(tmp_path)) if e != name and base in e)


def _outside(tmp_path):
    return sorted(p for p in os.listdir(tmp_path) if p != "cache")


def test_plain_tar_and_zip_extract(tmp_path):
    _tar(_cache(tmp_path) / "a.tar.gz", [("a/x.txt", "file", b"x"), ("a/d", "dir", None),
                                         ("a/d/y.txt", "file", b"yy")])
    d = _extract(tmp_path, "a.tar.gz")
    assert open(os.path.join(d, "a", "d", "y.txt"), "rb").read() == b"yy"
    with zipfile.ZipFile(_cache(tmp_path) / "z.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("z/one.txt", "1")
        z.writestr("z/sub/", "")
    d = _extract(tmp_path, "z.zip")
    assert open(os.path.join(d, "z", "one.txt")).read() == "1"
    assert os.path.isdir(os.path.join(d, "z", "sub"))


@pytest.mark.parametrize("name,why", [("../evil", "'..'"), ("/tmp/evil", "absolute"),
                                      ("a/../../evil", "'..'")])
def test_escaping_names_are_refused(tmp_path, name, why):
    _tar(_cache(tmp_path) / "n.tar", [("ok.txt", "file", b"ok"), (name, "file", b"x")],
         mode="w")
    with pytest.raises(ValueError, match=why) as e:
        _extract(tmp_path, "n.tar")
    assert "n.tar" in str(e.value)
    assert _left_behind(tmp_path, "n.tar") == [] and _outside(tmp_path) == []


def test_links_are_refused_by_default(tmp_path):
    _tar(_cache(tmp_path) / "l.tar.gz", [("f.txt", "file", b"f"), ("s", "sym", "f.txt")])
    with pytest.raises(ValueError, match="allow_links=True"):
        _extract(tmp_path, "l.tar.gz")
    assert _left_behind(tmp_path, "l.tar.gz") == []


def test_inside_links_extract_when_allowed(tmp_path):
    _tar(_cache(tmp_path) / "l.tar.gz", [("d/f.txt", "file", b"f"), ("s", "sym", "d/f.txt"),
                                         ("d/up", "sym", "../d"), ("h", "hard", "d/f.txt")])
    d = _extract(tmp_path, "l.tar.gz", extract_limits=ExtractLimits(allow_links=True))
    assert os.readlink(os.path.join(d, "s")) == "d/f.txt"
    assert open(os.path.join(d, "h"), "rb").read() == b"f"
    assert not os.path.islink(os.path.join(d, "h"))


def _cve_2025_4517_chain(escape_to):
    """The public proof of concept: 16 nested 247-character directory names, each with
    a one-letter symlink to it; a 254-character link at the bottom pointing back up
    ("../" * 16: the target) whose real path exceeds PATH_MAX, so os.path.realpath stops
    expanding there and `filter="data"` judges everything after it lexically; a link
    through it to `escape_to` (relative to the target: outside), a hard link to that
    and a regular file of the hard link's name, which overwrites the outside file.
    On Python 3.11.7 the previous `tarfile.extractall(filter="data")` extraction
    overwrote it."""
    comp, steps = "d" * 247, "abcdefghijklmnop"
    members, path = [], ""
    for step in steps:
        members.append((os.path.join(path, comp), "dir", None))
        members.append((os.path.join(path, step), "sym", comp))
        path = os.path.join(path, comp)
    link = os.path.join(*steps, "l" * 254)
    members.append((link, "sym", "../" * len(steps)))
    members.append(("escape", "sym", link + "/" + escape_to))
    members.append(("flaglink", "hard", "escape"))
    members.append(("flaglink", "file", b"overwritten\n"))
    return members


def test_symlink_chain_escape_is_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    victim = tmp_path / "outside" / "victim.txt"
    victim.write_text("original\n")
    # from the temporary dir in cache/datasets/: three levels up is tmp_path
    _tar(_cache(tmp_path) / "cve.tar", _cve_2025_4517_chain("../../../outside/victim.txt"),
         mode="w")
    for allow in (False, True):
        with pytest.raises(ValueError, match="link|symlink") as e:
            _extract(tmp_path, "cve.tar", extract_limits=ExtractLimits(allow_links=allow))
        assert "cve.tar" in str(e.value)
    assert victim.read_text() == "original\n"
    assert _left_behind(tmp_path, "cve.tar") == [] and _outside(tmp_path) == ["outside"]


@pytest.mark.parametrize("members", [
    [("a", "sym", "../../outside")],
    [("a", "sym", "/etc")],
    [("b", "sym", "c/.."), ("c", "sym", "../x")],  # lexically inside, really not
    [("a", "dir", None), ("a/l", "sym", "."), ("a/l/f", "file", b"f")],  # under a link
    [("h", "hard", "../../etc/passwd")],
    [("s", "sym", "missing")],
])
def test_escaping_or_dangling_links_are_refused_even_when_allowed(tmp_path, members):
    _tar(_cache(tmp_path) / "e.tar", members, mode="w")
    with pytest.raises(ValueError, match="e.tar"):
        _extract(tmp_path, "e.tar", extract_limits=ExtractLimits(allow_links=True))
    assert _left_behind(tmp_path, "e.tar") == [] and _outside(tmp_path) == []


def test_devices_are_refused(tmp_path):
    _tar(_cache(tmp_path) / "dev.tar", [("null", "chr", None)], mode="w")
    with pytest.raises(ValueError, match="device"):
        _extract(tmp_path, "dev.tar", extract_limits=ExtractLimits(allow_links=True))


def test_zip_symlinks_are_refused_by_default(tmp_path):
    info = zipfile.ZipInfo("s")
    info.create_system, info.external_attr = 3, (0o120777 << 16)
    with zipfile.ZipFile(_cache(tmp_path) / "s.zip", "w") as z:
        z.writestr(info, "../../outside")
    with pytest.raises(ValueError, match="symlink"):
        _extract(tmp_path, "s.zip")
    with pytest.raises(ValueError, match="does not resolve"):
        _extract(tmp_path, "s.zip", extract_limits=ExtractLimits(allow_links=True))


def test_zip_bomb_ratio_is_refused(tmp_path):
    with zipfile.ZipFile(_cache(tmp_path) / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(4):
            z.writestr(f"zeros{i}", bytes(4 << 20))  # 16 MiB from ~16 KB
    small = ExtractLimits(ratio_floor_bytes=1 << 20)
    with pytest.raises(ValueError, match="max_ratio") as e:
        _extract(tmp_path, "bomb.zip", extract_limits=small)
    assert "bomb.zip" in str(e.value)
    assert _left_behind(tmp_path, "bomb.zip") == []
    with pytest.raises(ValueError, match="max_total_bytes"):
        _extract(tmp_path, "bomb.zip", extract_limits=ExtractLimits(max_total_bytes=1 << 20))
    d = _extract(tmp_path, "bomb.zip", extract_limits=ExtractLimits(max_ratio=10_000))
    assert os.path.getsize(os.path.join(d, "zeros3")) == 4 << 20  # raised limits: extracts


def test_declared_size_over_the_default_total_is_refused_before_inflating(tmp_path):
    """A tar header declaring 5 GiB (the data is not even there): refused by the default
    limit from the header alone."""
    raw = io.BytesIO()
    info = tarfile.TarInfo("huge.bin")
    info.size = 5 << 30
    raw.write(info.tobuf())
    raw.write(bytes(1 << 16))
    (_cache(tmp_path) / "huge.tar").write_bytes(raw.getvalue())
    with pytest.raises(ValueError, match="max_total_bytes"):
        _extract(tmp_path, "huge.tar")
    assert _left_behind(tmp_path, "huge.tar") == []


def test_member_count_is_limited(tmp_path):
    _tar(_cache(tmp_path) / "many.tar", [(f"f{i}", "file", b"") for i in range(50)], mode="w")
    with pytest.raises(ValueError, match="max_members"):
        _extract(tmp_path, "many.tar", extract_limits=ExtractLimits(max_members=10))


def test_killed_extraction_leaves_nothing_for_long(tmp_path):
    """A temporary dir of a dead process (SIGKILL: no cleanup ran) goes at the next
    extraction; a live process's stays."""
    cache = _cache(tmp_path)
    dead = cache / ".k.extract-999999999-abcdef012345"
    dead.mkdir()
    (dead / "partial").write_bytes(b"x")
    live = cache / stale_temps.name(".k.extract-")
    live.mkdir()
    _tar(cache / "k.tar", [("x", "file", b"x")], mode="w")
    _extract(tmp_path, "k.tar")
    assert not dead.exists() and live.exists()


def test_bad_limits_argument(tmp_path):
    _tar(_cache(tmp_path) / "a.tar", [("x", "file", b"x")], mode="w")
    with pytest.raises(TypeError, match="ExtractLimits"):
        _extract(tmp_path, "a.tar", extract_limits={"max_ratio": 5})
    assert file_utils.ExtractLimits is ExtractLimits
