"""Every registered CUDA kernel compiles to PTX for cc 8.0 and 9.0 without a GPU, and
float32/float16 kernels contain no float64 instruction (silent promotion).

The kernel list comes from the package's registry (kernels_numba._cuda.KERNELS),
filled by importing every module in kernels_numba.gpu, so none can escape.
Runs in its own pytest process: compile_ptx does not exist under the simulator.
"""

import importlib
import os
import pkgutil
import re

import pytest

pytestmark = pytest.mark.ptx

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    pytest.skip("compile_ptx is unavailable under the CUDA simulator", allow_module_level=True)

import kernels_numba.gpu as gpu_pkg  # noqa: E402
from kernels_numba import _cuda  # noqa: E402

if _cuda.cuda is None:
    pytest.skip("numba-cuda is not installed (pip install -e '.[test]')", allow_module_level=True)

for _mod in pkgutil.iter_modules(gpu_pkg.__path__):
    importlib.import_module(f"kernels_numba.gpu.{_mod.name}")

CASES = [(spec, sig) for spec in _cuda.KERNELS.values() for sig in spec.signatures]
F64 = re.compile(r"\.f64\b")


def test_registry_is_populated():
    families = {name.split(".")[2] for name in _cuda.KERNELS}
    assert len(CASES) >= 10, f"suspiciously few kernels registered: {sorted(_cuda.KERNELS)}"
    assert "elementwise" in families


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)], ids=["sm80", "sm90"])
@pytest.mark.parametrize("spec,sig", CASES,
                         ids=[f"{s.name.split('.', 2)[2]}[{g}]" for s, g in CASES])
def test_kernel_compiles_without_f64(spec, sig, cc):
    ptx, _ = _cuda.cuda.compile_ptx(spec.pyfunc, sig, cc=cc)
    assert ".entry" in ptx
    if "float64" not in sig:
        bad = [line.strip() for line in ptx.splitlines() if F64.search(line)]
        assert not bad, f"{spec.name} {sig}: float64 instructions in PTX: {bad[:5]}"
