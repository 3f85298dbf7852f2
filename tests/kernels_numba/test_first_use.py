"""kernels_numba/first_use.py in this process: cpu_work() holds NumPy's OpenBLAS at one
thread, nested or not, and its outermost exit puts back the count it found; a count the
user sets meanwhile is left alone; prepare() is idempotent. (A fresh process's import
and fit: tests/kerasish/test_import_side_effects.py.)"""

import pytest

import kernels_numba
from kernels_numba import _blas, first_use


@pytest.fixture
def blas_threads():
    get, set_ = _blas._state["get_threads"], _blas._state["set_threads"]
    if get is None:
        pytest.skip(f"no OpenBLAS thread control here ({_blas.report()})")
    saved = get()
    set_(2)  # a known count other than ours
    yield get, set_
    set_(saved)


def test_cpu_work_limits_nested_and_restores(blas_threads):
    get, _ = blas_threads
    with kernels_numba.cpu_work():
        assert get() == 1
        with kernels_numba.cpu_work():  # e.g. evaluate() from a callback inside fit()
            assert get() == 1
        assert get() == 1  # the inner exit is not the outermost
    assert get() == 2


def test_cpu_work_restores_on_error(blas_threads):
    get, _ = blas_threads
    with pytest.raises(RuntimeError):
        with kernels_numba.cpu_work():
            raise RuntimeError("boom")
    assert get() == 2


def test_a_count_the_user_sets_inside_is_kept(blas_threads):
    get, set_ = blas_threads
    with kernels_numba.cpu_work():
        set_(3)  # the user's own call, inside fit (a callback)
    assert get() == 3


def test_prepare_is_idempotent_and_reported():
    first_use.prepare()
    first_use.prepare()
    assert first_use._state["prepared"]
    assert "numba threads started" in first_use.report()
