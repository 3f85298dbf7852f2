"""The limits applied when loading untrusted files (docs/design.md, "Loading untrusted
files"). One module-level `LIMITS`; change its fields to raise a limit, e.g.
`kerasish.saving.load_limits.LIMITS.max_weight_bytes = 64 << 30`."""

import dataclasses
import os


@dataclasses.dataclass
class LoadLimits:
    """max_attr_bytes: one HDF5 attribute, and all attributes of one object, as
        stored (checked before any is read); default 1 GiB.
    max_attr_read_bytes: attribute bytes actually read in one load, variable-length
        data included (a variable-length list is refused before it is read when its
        items, each at most the file's size, could pass this); default 1 GiB.
    max_depth: groups nested in a weights file; default 32.
    max_weight_bytes: the weights a model built from a file (or from JSON) may
        declare in all; None: `weight_memory_fraction` of the available memory.
    weight_memory_fraction: default 0.5.
    weight_slack_bytes: how far a model's declared weights may exceed those the file
        holds (as float32), for variables a file need not hold; default 64 MiB.
    """

    max_attr_bytes: int = 1 << 30
    max_attr_read_bytes: int = 1 << 30
    max_depth: int = 32
    max_weight_bytes: int = None
    weight_memory_fraction: float = 0.5
    weight_slack_bytes: int = 64 << 20


LIMITS = LoadLimits()


def available_memory():
    """Bytes of memory available now (MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def weight_limit():
    """(bytes, how it was set) for the total weights of a model built from a file."""
    if LIMITS.max_weight_bytes is not None:
        return int(LIMITS.max_weight_bytes), "load_limits.LIMITS.max_weight_bytes"
    avail = available_memory()
    if avail is None:
        return 64 << 30, "a 64 GiB default (available memory unknown)"
    return int(avail * LIMITS.weight_memory_fraction), (
        f"{LIMITS.weight_memory_fraction:g} of the {avail:,} bytes of available memory; "
        "raise load_limits.LIMITS.max_weight_bytes")
