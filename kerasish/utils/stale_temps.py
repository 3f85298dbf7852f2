"""Temporary directories named for the process that made them, so that one left by a
killed process (SIGKILL runs no cleanup) is removed by the next one that makes its
kind: `<prefix><pid>-<hex>`. A directory is removed only when its process is gone,
it is a real directory (not a symlink) and it belongs to this user."""

import os
import secrets
import shutil


def name(prefix):
    """A fresh `<prefix><pid>-<hex>` name."""
    return f"{prefix}{os.getpid()}-{secrets.token_hex(6)}"


def pid_alive(pid):
    """True unless process `pid` is known to be gone (EPERM: alive, someone else's)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def remove_dead(directory, prefix):
    """Remove `directory/<prefix><pid>-<hex>` entries whose process has exited.
    Returns the paths removed; never raises."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in names:
        if not entry.startswith(prefix):
            continue
        pid, sep, tag = entry[len(prefix):].partition("-")
        if not (sep and pid.isdigit() and tag and all(c in "0123456789abcdef" for c in tag)):
            continue
        if pid_alive(int(pid)):
            continue
        path = os.path.join(directory, entry)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not os.path.isdir(path) or os.path.islink(path) or (uid is not None and
                                                                 st.st_uid != uid):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed
