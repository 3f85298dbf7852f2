"""Mutant makers for test_fuzz_files.py's `.keras` archives and `get_file(extract=True)`
archives (issue 40): crafted configs, members and weights inside a `.keras`; hostile
members (links out, `..`, devices, bombs) in tar and zip archives."""

import io
import json
import os
import tarfile
import zipfile


def rewrite_keras(base, out, config=None, weights=None, extra=(), compression=None):
    """A copy of the `.keras` file `base` with config.json (a dict or raw bytes) and/or
    model.weights.h5 (bytes) replaced and `extra` (name, bytes) members added."""
    with zipfile.ZipFile(base) as zin, zipfile.ZipFile(
            out, "w", compression or zipfile.ZIP_STORED) as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "config.json" and config is not None:
                data = config if isinstance(config, bytes) else json.dumps(config).encode()
            if name == "model.weights.h5" and weights is not None:
                data = weights
            zout.writestr(name, data)
        for name, data in extra:
            zout.writestr(name, data)
    return out


def _with_layer_edit(config, edit):
    config = json.loads(json.dumps(config))
    for entry in config["config"]["layers"]:
        edit(entry)
    return config


def keras_structural(base, d):
    """(tag, path) of `.keras` mutants built on `base`."""
    with zipfile.ZipFile(base) as z:
        config = json.loads(z.read("config.json"))

    def units(entry):
        if entry["class_name"] == "Dense":
            entry["config"]["units"] = 2 ** 26

    lam = {"module": "keras.layers", "class_name": "Lambda", "registered_name": None,
           "config": {"name": "lam", "function": {"class_name": "__lambda__",
                                                  "config": {"code": "AAAA"}}}}
    reversed_layers = json.loads(json.dumps(config))
    reversed_layers["config"]["layers"] = reversed_layers["config"]["layers"][::-1]
    with_lambda = json.loads(json.dumps(config))
    with_lambda["config"]["layers"].append(lam)
    cases = [
        ("units", {"config": _with_layer_edit(config, units)}),
        ("bigint", {"config": json.dumps(config).replace(
            '"units": 5', '"units": ' + "9" * 5000).encode()}),
        ("lambda", {"config": with_lambda}),
        ("reversed", {"config": reversed_layers}),
        ("nested", {"config": b"[" * 200_000 + b"]" * 200_000}),
        ("notdict", {"config": b"[1, 2, 3]"}),
        ("traversal", {"extra": [("../../evil.txt", b"x")]}),
        ("absolute", {"extra": [("/tmp/evil.txt", b"x")]}),
        ("duplicate", {"extra": [("config.json", b"{}")]}),
        ("bomb", {"extra": [("padding.bin", bytes(64 << 20))],
                  "compression": zipfile.ZIP_DEFLATED}),
        ("notweights", {"weights": b"\x89HDF\r\n\x1a\n" + bytes(4000)}),
    ]
    for i, (tag, kwargs) in enumerate(cases):
        yield tag, rewrite_keras(base, os.path.join(d, f"k{i:02d}-{tag}.keras"), **kwargs)


def make_tar(path, members, mode="w:gz"):
    """members: (name, kind, payload) with kind file / dir / sym / hard / chr / fifo."""
    with tarfile.open(path, mode) as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                info.size, data = len(payload), io.BytesIO(payload)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
            elif kind in ("sym", "hard"):
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = payload
            elif kind == "chr":
                info.type = tarfile.CHRTYPE
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, data)
    return path


def archive_bases(d):
    """An ordinary tar.gz and zip (what the byte mutants start from)."""
    tgz = make_tar(os.path.join(d, "base.tar.gz"), [
        ("data", "dir", None), ("data/a.txt", "file", b"alpha " * 200),
        ("data/b.bin", "file", bytes(range(256)) * 8)])
    zpath = os.path.join(d, "base.zip")
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data/a.txt", "alpha " * 200)
        z.writestr("data/b.bin", bytes(range(256)) * 8)
    return tgz, zpath


def archive_structural():
    """(tag, suffix, writer(path)) of hostile archives."""
    chain, path = [], ""  # CVE-2025-4517's shape (see test_archive_extract.py)
    for step in "abcdefghijklmnop":
        chain.append((os.path.join(path, "d" * 247), "dir", None))
        chain.append((os.path.join(path, step), "sym", "d" * 247))
        path = os.path.join(path, "d" * 247)
    link = os.path.join(*"abcdefghijklmnop", "l" * 254)
    chain.append((link, "sym", "../" * 16))
    # the target's temp dir is <base>/xNNNN/datasets/.<name>.extract-...: 4 up is <base>'s
    # parent, which the test lists for "evil"
    chain.append(("escape", "sym", link + "/../../../.."))
    chain.append(("escape/kerasish-fuzz-evil.txt", "file", b"pwned"))
    tars = [
        ("dotdot", [("../evil", "file", b"x")]),
        ("abs", [("/tmp/kerasish-fuzz-evil", "file", b"x")]),
        ("symout", [("s", "sym", "../../../etc")]),
        ("symabs", [("s", "sym", "/etc")]),
        ("hardout", [("h", "hard", "/etc/passwd")]),
        ("chain", chain),
        ("device", [("null", "chr", None)]),
        ("fifo", [("p", "fifo", None)]),
        ("dup", [("x", "file", b"1"), ("x", "file", b"2")]),
        ("underfile", [("x", "file", b"1"), ("x/y", "file", b"2")]),
        ("bomb", [(f"z{i}", "file", bytes(40 << 20)) for i in range(2)]),
    ]
    for tag, members in tars:
        yield tag, ".tar.gz", lambda p, m=members: make_tar(p, m)

    def huge_header(p):
        info = tarfile.TarInfo("huge.bin")
        info.size = 5 << 30
        with open(p, "wb") as f:
            f.write(info.tobuf() + bytes(1 << 12))

    yield "hugeheader", ".tar", huge_header

    def zip_link(p):
        info = zipfile.ZipInfo("s")
        info.create_system, info.external_attr = 3, 0o120777 << 16
        with zipfile.ZipFile(p, "w") as z:
            z.writestr(info, "../../../etc")

    yield "ziplink", ".zip", zip_link

    def zip_bomb(p):
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("zeros", bytes(80 << 20))

    yield "zipbomb", ".zip", zip_bomb

    def zip_names(p):
        with zipfile.ZipFile(p, "w") as z:
            z.writestr("ok.txt", "ok")
            z.writestr("a/../../evil.txt", "x")

    yield "zipdotdot", ".zip", zip_names
