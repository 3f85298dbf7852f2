"""Extracting an untrusted tar or zip archive (`get_file(extract=True)`), by our own
rules rather than the Python version's `tarfile` filters (a chain of long symlinks
defeats `filter="data"` on some versions: CVE-2025-4517).

Every member is validated: a relative name without `..`, NUL or a drive; regular
files and directories only, unless `allow_links` (then a symlink or hard link must
resolve, through the archive's other links, to a member inside the target, checked
once the whole member list is known); never devices, FIFOs or sparse files. Files are
written with O_EXCL | O_NOFOLLOW into a fresh temporary directory beside the target,
links are made last (so no write ever goes through one), and the total size and the
compression ratio are checked against `ExtractLimits` as the bytes arrive (declared
sizes first, before anything is inflated). The directory is renamed into place only
when everything passed; on any failure it is removed.
"""

import dataclasses
import os
import shutil
import stat
import tarfile
import zipfile
import zlib

_CHUNK = 1 << 20
_MAX_LINK_HOPS = 40  # as the kernel's symlink limit


@dataclasses.dataclass
class ExtractLimits:
    """The limits `get_file(extract=True)` applies; pass your own to raise them.

    max_total_bytes: all members together, as extracted (default 4 GiB).
    max_ratio: extracted bytes per archive byte, once past `ratio_floor_bytes`
        (default 200; text and images compress 3-10x, a zip bomb 1000x).
    max_members: entries in the archive (default 100,000).
    allow_links: accept symlinks and hard links that resolve inside (default False).
    """

    max_total_bytes: int = 4 << 30
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 64 << 20
    max_members: int = 100_000
    allow_links: bool = False


DEFAULT_LIMITS = ExtractLimits()


class UnsafeArchiveError(ValueError):
    """An archive member or total breaks a rule or a limit (the message says which)."""


_Refused = UnsafeArchiveError  # short, for the many raises below


def _member_parts(name, archive):
    """The member's path components, or UnsafeArchiveError naming what is wrong with it."""
    if "\x00" in name or "\\" in name:
        raise _Refused(f"get_file: refusing to extract {archive}: member {name!r:.200} "
                       "has a NUL or a backslash in its name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _Refused(f"get_file: refusing to extract {archive}: member {name!r:.200} "
                       "has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _Refused(f"get_file: refusing to extract {archive}: member {name!r:.200} "
                       "has a '..' component (a path traversal attempt?)")
    return parts


class _Budget:
    def __init__(self, archive, limits):
        self.archive, self.limits = archive, limits
        self.size = max(os.path.getsize(archive), 1)
        self.declared = self.written = 0

    def _check(self, total, what):
        lim = self.limits
        if total > lim.max_total_bytes:
            raise _Refused(f"get_file: refusing to extract {self.archive}: its members "
                           f"{what} more than {lim.max_total_bytes} bytes "
                           "(ExtractLimits.max_total_bytes)")
        if total > lim.ratio_floor_bytes and total > lim.max_ratio * self.size:
            raise _Refused(f"get_file: refusing to extract {self.archive}: its members "
                           f"{what} {total} bytes from a {self.size}-byte archive, over "
                           f"{lim.max_ratio:g}x (ExtractLimits.max_ratio; a zip bomb?)")

    def declare(self, nbytes):
        self.declared += nbytes
        self._check(self.declared, "declare")

    def wrote(self, nbytes):
        self.written += nbytes
        self._check(self.written, "inflate to")


def _write_file(root, parts, src, size, budget, mode):
    directory = os.path.join(root, *parts[:-1])
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, parts[-1])
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o777 if mode & 0o111 else 0o666)
    got = 0
    with os.fdopen(fd, "wb") as out:
        while True:
            chunk = src.read(min(_CHUNK, size - got + 1))
            if not chunk:
                break
            got += len(chunk)
            if got > size:
                raise _Refused(f"get_file: refusing to extract {budget.archive}: member "
                               f"{'/'.join(parts)!r:.200} inflates past its declared "
                               f"{size} bytes")
            budget.wrote(len(chunk))
            out.write(chunk)
    if got != size:
        raise OSError(f"get_file: cannot extract {budget.archive}: member "
                      f"{'/'.join(parts)!r:.200} is truncated ({got} of {size} bytes)")


def _resolve(start, target, links, archive, member):
    """Where a link lands, resolved component by component through the archive's
    other symlinks (a POSIX lookup inside the target); UnsafeArchiveError if it leaves it."""
    refuse = UnsafeArchiveError(f"get_file: refusing to extract {archive}: link {member!r:.200} -> "
                      f"{target!r:.200} does not resolve to a member inside the target")
    if target.startswith("/") or "\x00" in target:
        raise refuse
    todo = target.split("/")[::-1]  # a stack: the next component last
    current = list(start)
    hops = 0
    while todo:
        part = todo.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                raise refuse
            current.pop()
            continue
        current.append(part)
        key = "/".join(current)
        if key in links:
            hops += 1
            if hops > _MAX_LINK_HOPS:
                raise refuse
            current.pop()
            link_target = links[key]
            if link_target.startswith("/"):
                raise refuse
            todo.extend(link_target.split("/")[::-1])
    return "/".join(current)


def _check_links(symlinks, hardlinks, kinds, archive):
    """Every link must end at a file or directory member inside the target."""
    link_map = {"/".join(p): t for p, t in symlinks}
    for parts, target in symlinks:
        landed = _resolve(parts[:-1], target, link_map, archive, "/".join(parts))
        if kinds.get(landed) not in ("file", "dir"):
            raise _Refused(f"get_file: refusing to extract {archive}: symlink "
                           f"{'/'.join(parts)!r:.200} -> {target!r:.200} is dangling or "
                           "points outside the archive's members")
    for parts, target in hardlinks:
        landed = _resolve([], target, link_map, archive, "/".join(parts))
        if kinds.get(landed) != "file":
            raise _Refused(f"get_file: refusing to extract {archive}: hard link "
                           f"{'/'.join(parts)!r:.200} -> {target!r:.200} does not name a "
                           "regular file member")
    # no member may sit under a symlink (its write would go through it)
    for key in kinds:
        parts = key.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in link_map:
                raise _Refused(f"get_file: refusing to extract {archive}: member "
                               f"{key!r:.200} lies under the symlink "
                               f"{'/'.join(parts[:i])!r:.200}")


def _record(kinds, parts, kind, archive):
    key = "/".join(parts)
    if not parts:
        if kind == "dir":
            return key
        raise _Refused(f"get_file: refusing to extract {archive}: a member has an empty name")
    old = kinds.get(key)
    if old is not None and not (old == kind == "dir"):
        raise _Refused(f"get_file: refusing to extract {archive}: member {key!r:.200} "
                       "appears twice")
    for i in range(1, len(parts)):
        parent = kinds.setdefault("/".join(parts[:i]), "dir")
        if parent != "dir":
            raise _Refused(f"get_file: refusing to extract {archive}: member {key!r:.200} "
                           f"lies under the non-directory {'/'.join(parts[:i])!r:.200}")
    kinds[key] = kind
    return key


def _extract_tar(archive, root, limits, budget):
    kinds, symlinks, hardlinks = {}, [], []
    with tarfile.open(archive, "r:*") as tar:
        count = 0
        while True:
            member = tar.next()
            if member is None:
                break
            count += 1
            if count > limits.max_members:
                raise _Refused(f"get_file: refusing to extract {archive}: more than "
                               f"{limits.max_members} members (ExtractLimits.max_members)")
            parts = _member_parts(member.name, archive)
            if member.issym() or member.islnk():
                if not limits.allow_links:
                    raise _Refused(f"get_file: refusing to extract {archive}: member "
                                   f"{member.name!r:.200} is a link (links are refused "
                                   "unless ExtractLimits(allow_links=True))")
                _record(kinds, parts, "link", archive)
                (symlinks if member.issym() else hardlinks).append((parts, member.linkname))
            elif member.isdir():
                if _record(kinds, parts, "dir", archive):
                    os.makedirs(os.path.join(root, *parts), exist_ok=True)
            elif member.isfile() and not member.issparse():
                _record(kinds, parts, "file", archive)
                budget.declare(member.size)
                src = tar.extractfile(member)
                _write_file(root, parts, src, member.size, budget, member.mode)
            else:
                raise _Refused(f"get_file: refusing to extract {archive}: member "
                               f"{member.name!r:.200} is a device, FIFO or sparse file "
                               "(only regular files and directories are extracted)")
    _check_links(symlinks, hardlinks, kinds, archive)
    _make_links(root, symlinks, hardlinks, symlinks_map={"/".join(p): t for p, t in symlinks},
                archive=archive)


def _make_links(root, symlinks, hardlinks, symlinks_map, archive):
    for parts, target in hardlinks:  # a copy of the regular file it names
        landed = _resolve([], target, symlinks_map, archive, "/".join(parts))
        directory = os.path.join(root, *parts[:-1])
        os.makedirs(directory, exist_ok=True)
        shutil.copyfile(os.path.join(root, *landed.split("/")), os.path.join(directory,
                                                                            parts[-1]),
                        follow_symlinks=False)
    for parts, target in symlinks:
        directory = os.path.join(root, *parts[:-1])
        os.makedirs(directory, exist_ok=True)
        os.symlink(target, os.path.join(directory, parts[-1]))


def _zip_kind(info):
    mode = info.external_attr >> 16
    if info.create_system == 3 and mode:  # Unix attributes present
        fmt = stat.S_IFMT(mode)
        if fmt == stat.S_IFLNK:
            return "link"
        if fmt == stat.S_IFDIR:
            return "dir"
        if fmt not in (0, stat.S_IFREG):
            return "special"
    return "dir" if info.filename.endswith("/") else "file"


def _extract_zip(archive, root, limits, budget):
    kinds, symlinks = {}, []
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise _Refused(f"get_file: refusing to extract {archive}: {len(infos)} members, "
                           f"over {limits.max_members} (ExtractLimits.max_members)")
        plan = []
        for info in infos:  # the whole list is checked before a byte is inflated
            parts = _member_parts(info.filename, archive)
            kind = _zip_kind(info)
            if info.flag_bits & 0x1:
                raise _Refused(f"get_file: refusing to extract {archive}: member "
                               f"{info.filename!r:.200} is encrypted")
            if kind == "special":
                raise _Refused(f"get_file: refusing to extract {archive}: member "
                               f"{info.filename!r:.200} is a device or FIFO")
            if kind == "link" and not limits.allow_links:
                raise _Refused(f"get_file: refusing to extract {archive}: member "
                               f"{info.filename!r:.200} is a symlink (links are refused "
                               "unless ExtractLimits(allow_links=True))")
            if kind == "link" and info.file_size > 4096:
                raise _Refused(f"get_file: refusing to extract {archive}: symlink "
                               f"{info.filename!r:.200} has a {info.file_size}-byte target")
            _record(kinds, parts, kind, archive)
            budget.declare(info.file_size)
            plan.append((info, parts, kind))
        for info, parts, kind in plan:
            if kind == "dir":
                if parts:
                    os.makedirs(os.path.join(root, *parts), exist_ok=True)
            elif kind == "link":
                with zf.open(info) as src:
                    target = src.read(info.file_size + 1)
                try:
                    symlinks.append((parts, target.decode("utf-8")))
                except UnicodeDecodeError:
                    raise _Refused(f"get_file: refusing to extract {archive}: symlink "
                                   f"{info.filename!r:.200} has a non-UTF-8 target") from None
            else:
                with zf.open(info) as src:
                    _write_file(root, parts, src, info.file_size, budget,
                                (info.external_attr >> 16) & 0o777)
    _check_links(symlinks, [], kinds, archive)
    _make_links(root, symlinks, [], {"/".join(p): t for p, t in symlinks}, archive)


def extract_into(archive, tmp_root, limits=None):
    """Extract `archive` (tar, compressed tar or zip) into the empty directory
    `tmp_root`, which the caller then renames into place (or removes on error).

    Raises:
        ValueError: the archive breaks a rule or a limit (the message names it), or is
            neither tar nor zip.
        OSError: the archive is truncated or corrupt.
    """
    limits = DEFAULT_LIMITS if limits is None else limits
    if not isinstance(limits, ExtractLimits):
        raise TypeError(f"get_file: expected extract_limits to be an ExtractLimits; "
                        f"received {type(limits).__name__}")
    budget = _Budget(archive, limits)
    try:
        if tarfile.is_tarfile(archive):
            _extract_tar(archive, tmp_root, limits, budget)
        elif zipfile.is_zipfile(archive):
            _extract_zip(archive, tmp_root, limits, budget)
        else:
            raise ValueError(f"get_file: extract=True expects a tar or zip archive; "
                             f"{archive} is neither")
    except (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError) as e:
        raise OSError(f"get_file: cannot extract {archive}: the archive is truncated or "
                      f"corrupt ({type(e).__name__}: {e})") from e
    except OSError as e:
        if archive in str(e):
            raise
        raise OSError(f"get_file: cannot extract {archive}: {e}") from e


__all__ = ["DEFAULT_LIMITS", "ExtractLimits", "UnsafeArchiveError", "extract_into"]
