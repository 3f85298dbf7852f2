"""gpu_check step `env`: the GPU (nvidia-smi), Python package versions and the CUDA
toolchain paths the kernels compile with, then one RESULT line.

    python -m benchmarks.gpu_check.env [--json FILE]
"""

import argparse
import glob
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata

from benchmarks.gpu_check._common import result

PACKAGES = ("numpy", "numba", "numba-cuda", "cuda-core", "cuda-bindings", "cuda-pathfinder",
            "nvidia-nvvm", "nvidia-cuda-nvrtc", "nvidia-nvjitlink", "torch", "pytest",
            "pytest-xdist", "pytest-timeout")
LIBS = ("nvvm", "nvrtc", "nvJitLink", "cudart")


def _version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def gpu():
    """The nvidia-smi line (name, driver, memory, compute capability), or why none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "no nvidia-smi"
    query = "name,driver_version,memory.total,compute_cap"
    run = subprocess.run([exe, f"--query-gpu={query}", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20, check=False)
    return (run.stdout.strip() or run.stderr.strip() or f"nvidia-smi rc {run.returncode}")


def library_paths():
    """Where cuda-pathfinder finds each compiler/runtime library (what numba-cuda loads)."""
    out = {}
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
    except ImportError as exc:
        return {lib: f"cuda.pathfinder unavailable ({exc})" for lib in LIBS}
    for lib in LIBS:
        try:
            out[lib] = load_nvidia_dynamic_lib(lib).abs_path
        except Exception as exc:  # noqa: BLE001 - report, this is a diagnosis
            out[lib] = f"not found ({type(exc).__name__})"
    return out


def torch_cuda():
    try:
        import torch
    except ImportError:
        return "torch not installed"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__}: CUDA not available"
    return (f"torch {torch.__version__} CUDA {torch.version.cuda} on "
            f"{torch.cuda.get_device_name(0)}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    smi = gpu()
    print(f"GPU: {smi}")
    print(f"python {sys.version.split()[0]} on {platform.platform()}, {os.cpu_count()} CPUs")
    versions = {name: _version(name) for name in PACKAGES}
    for name, v in versions.items():
        print(f"  {name:18s} {v}")
    ptxas = shutil.which("ptxas") or next(iter(sorted(glob.glob(
        "/usr/local/cuda*/bin/ptxas"), reverse=True)), "not found")
    paths = {"ptxas": ptxas, **library_paths()}
    for name, path in paths.items():
        print(f"  {name:18s} {path}")
    for var in ("CUDA_HOME", "CUDA_PATH", "NUMBA_CACHE_DIR", "KERASISH_DATA_DIR",
                "NUMBA_ENABLE_CUDASIM", "CUDA_VISIBLE_DEVICES"):
        print(f"  ${var:17s} {os.environ.get(var, '(unset)')}")
    tc = torch_cuda()
    print(tc)
    result(f"{smi}; numba-cuda {versions['numba-cuda']}; {tc}", args.json, "env",
           {"gpu": smi, "versions": versions, "paths": paths, "torch": tc})
    return 0


if __name__ == "__main__":
    sys.exit(main())
