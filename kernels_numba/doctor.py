"""`python -m kernels_numba.doctor`: can this machine run our CUDA kernels, and if not, why.

Prints the versions that must agree (driver, runtime, NVVM and the PTX ISA it emits,
NVRTC, nvJitLink, ptxas), then compiles and launches the probe kernel that
`device='auto'` relies on, and ends with one verdict line. Exit status 0 when CUDA
is usable, 1 when not (2 for the simulator, which is not hardware).
"""

import re
import shutil
import subprocess
import sys
from importlib import metadata

# Driver CUDA version -> newest PTX ISA it can JIT (CUDA release notes, "PTX ISA").
_DRIVER_PTX = {(12, 0): (8, 0), (12, 1): (8, 1), (12, 2): (8, 2), (12, 3): (8, 3),
               (12, 4): (8, 4), (12, 5): (8, 5), (12, 6): (8, 5), (12, 8): (8, 7),
               (12, 9): (8, 8), (13, 0): (9, 0)}
WHEELS = ("numba", "numba-cuda", "cuda-bindings", "cuda-core", "nvidia-nvvm",
          "nvidia-cuda-nvrtc", "nvidia-nvjitlink", "nvidia-cuda-runtime", "cuda-toolkit")


def max_ptx_for_driver(version):
    """(major, minor) PTX ISA a driver of CUDA `version` (major, minor) accepts."""
    if version in _DRIVER_PTX:
        return _DRIVER_PTX[version]
    major, minor = version
    if major >= 13:  # 13.x drivers take ISA 9.x (13.0 -> 9.0, 13.5 -> 9.5)
        return (9 + major - 13, minor)
    older = [v for v in _DRIVER_PTX if v <= version]
    return _DRIVER_PTX[max(older)] if older else (0, 0)


def ptx_version(ptx):
    m = re.search(r"^\.version (\d+)\.(\d+)", ptx, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _try(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the doctor reports every failure
        return f"unavailable ({type(exc).__name__}: {str(exc).strip().splitlines()[0]})"


def _wheel(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _driver_version():
    from cuda.bindings import driver as cu

    (err,) = cu.cuInit(0)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuInit: {err!r}")
    err, v = cu.cuDriverGetVersion()
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuDriverGetVersion: {err!r}")
    return (v // 1000, (v % 1000) // 10)


def _nvrtc_version():
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return (major, minor)


def _nvjitlink_version():
    from cuda.bindings import nvjitlink

    return tuple(nvjitlink.version())


def _probe_ptx(cc):
    from kernels_numba import _cuda

    return _cuda.cuda.compile_ptx(_cuda._probe_body, "void(int32[::1])", cc=cc)[0]


def _ptxas(ptx, cc):
    exe = shutil.which("ptxas")
    if exe is None:
        return "ptxas not on PATH (optional)"
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    ver = (re.findall(r"release (\S+),", ver) or ["?"])[0]
    run = subprocess.run([exe, f"-arch=sm_{cc[0]}{cc[1]}", "-o", "/dev/null", "-"],
                         input=ptx, capture_output=True, text=True)
    errors = [line for line in run.stderr.splitlines() if "error" in line.lower()] or ["?"]
    verdict = "assembles the probe" if run.returncode == 0 else f"REFUSES the probe: {errors[0]}"
    return f"{exe} (CUDA {ver}): {verdict}"


def report(out=print):
    """Print the report; returns the exit status."""
    from kernels_numba import _cuda

    out("kernels_numba doctor")
    for name in WHEELS:
        out(f"  {name:22s} {_wheel(name)}")
    if _cuda.SIMULATOR:
        out("CUDA: simulator (NUMBA_ENABLE_CUDASIM=1): kernels run on the CPU, no hardware")
        return 2
    if _cuda.cuda is None:
        out(f"CUDA: unusable: {_cuda.IMPORT_ERROR}")
        return 1
    drv = _try(_driver_version)
    out(f"  driver CUDA version    {drv}")
    out(f"  runtime version        {_try(lambda: _cuda.cuda.runtime.get_version())}")
    out(f"  NVRTC version          {_try(_nvrtc_version)}")
    jit = _try(_nvjitlink_version)
    out(f"  nvJitLink version      {jit}")
    from numba.cuda.cudadrv import driver as nbdrv

    linker = "nvJitLink (in-process PTX -> cubin)" if _try(nbdrv._have_nvjitlink) is True \
        else "the driver (cuLink: the driver JITs the PTX)"
    out(f"  linker                 {linker}")
    cc = (9, 0)
    dev = _try(lambda: _cuda.cuda.get_current_device())
    if not isinstance(dev, str):
        cc = dev.compute_capability
        out(f"  device                 {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}"
            f", compute capability {cc[0]}.{cc[1]}")
    ptx = _try(lambda: _probe_ptx(cc))
    isa = ptx_version(ptx) if not ptx.startswith("unavailable") else None
    out(f"  NVVM emits PTX ISA     {isa if isa else ptx} (for sm_{cc[0]}{cc[1]})")
    if isa:
        out(f"  ptxas                  {_ptxas(ptx, cc)}")
        if isinstance(drv, tuple) and not isinstance(jit, tuple) and \
                isa > max_ptx_for_driver(drv):
            out(f"  WARNING: PTX ISA {isa} is newer than driver CUDA {drv} accepts "
                f"({max_ptx_for_driver(drv)}) and no nvJitLink is installed: install "
                f"NVVM/NVRTC/nvJitLink wheels of CUDA {drv[0]}.{drv[1]} (setup.cfg [cuda])")
    out(f"  disk kernel cache      {'on' if _cuda.DISK_CACHE else 'off'}"
        f"{' (' + _cuda.CACHE_ERROR + ')' if _cuda.CACHE_ERROR else ''}")
    status, reason = _cuda.probe()
    if status == "ok":
        out("CUDA: usable (probe kernel compiled, launched and returned the right values)")
        return 0
    out(f"CUDA: unusable ({status}): {reason}")
    return 1


if __name__ == "__main__":
    sys.exit(report())
