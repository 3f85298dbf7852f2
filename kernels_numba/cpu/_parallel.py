"""One compiled parallel loop for every CPU kernel that splits its work: `run_parts`.

A `parallel=True` njit function is the slowest thing numba compiles (parfor analysis,
a second pipeline for the gufunc, then LLVM on both): 1-2 s each on a cold cache,
against 0.1-0.8 s for the same loops serial. So a splittable kernel is written once,
serial, over a range of its work (`rows(..., r0, r1)`, @njit(inline="always"): inlined
into its one caller, never a compile of its own), called from a C-callable "part"
(PART_SIG: unpacks the arguments from an int64 vector, runs block p of parts). The part
is the kernel's ONE compile (a cached cfunc): `run_parts` runs its blocks on numba's
threads from one parallel loop (`_drive`, compiled once per machine for all kernels,
calling parts by address, so it is disk-cached), and small work runs it as one block
on the calling thread (`lazy_part.serial`, through ctypes). Every element is computed
by the same code whatever the path or the timing (bit-identical results). (A part that
called a separately compiled njit kernel would make LLVM optimise the kernel twice:
numba re-optimises callees linked into each caller.)

The argument vector: arrays as (address, shape...) entries (`pack`), scalars as int64;
float scalars go bit-cast (`f32_bits` / `from_f32_bits`); a part views its arrays through
intrinsics (`f32_4d(a, k)` ...: LLVM, no inlined helper to re-type). Parts are compiled
lazily, on first use (`lazy_part`), so a model compiles only the kernels it runs.

Bound calls (`Bound`, `part_call`, `chain`, `bound_op`): an op's work with every decision
taken (pointers, packed vector, split), which a replayed CPU launch plan repeats.
"""

import ctypes

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.caching import FunctionCache
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from kernels_numba.cpu import compile_ahead

PART_SIG = types.void(types.CPointer(types.int64), types.int64, types.int64)
# Below this many elements of work, waking the thread pool costs more than it saves.
PARALLEL_MIN_WORK = 1 << 15


@intrinsic
def _call_part(typingctx, address, args, p, parts):
    """Call the `void(int64*, int64, int64)` function at `address`."""
    sig = types.void(address, args, p, parts)

    def codegen(context, builder, signature, values):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64, i64, i64])
        fn = builder.inttoptr(values[0], fnty.as_pointer())
        builder.call(fn, list(values[1:]))
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(parallel=True, nogil=True, cache=True)
def _drive(address, args, parts):
    for p in numba.prange(parts):
        _call_part(address, args, p, parts)


def _pointer_intrinsic(numba_type, llvm_type):
    @intrinsic
    def as_pointer(typingctx, address):
        def codegen(context, builder, signature, values):
            return builder.inttoptr(values[0], ir.PointerType(llvm_type))

        return types.CPointer(numba_type)(address), codegen

    return as_pointer


f32_pointer = _pointer_intrinsic(types.float32, ir.FloatType())


@intrinsic
def from_f32_bits(typingctx, bits):
    """The float32 whose bit pattern is the low 32 bits of an int64 (see f32_bits)."""
    def codegen(context, builder, signature, values):
        low = builder.trunc(values[0], ir.IntType(32))
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


def f32_bits(value):
    """An argument-vector entry carrying the float32 `value` bit for bit."""
    return int(np.float32(value).view(np.int32))


def _c_array(context, builder, array_type, data, shape):
    """A C-contiguous array struct of array_type over `data` (a pointer) and `shape`."""
    i64 = ir.IntType(64)
    itemsize = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
    strides, step = [], ir.Constant(i64, itemsize)
    for size in reversed(shape):  # C order
        strides.insert(0, step)
        step = builder.mul(step, size)
    out = make_array(array_type)(context, builder)
    populate_array(out, data=data, shape=cgutils.pack_array(builder, shape),
                   strides=cgutils.pack_array(builder, strides),
                   itemsize=ir.Constant(i64, itemsize), meminfo=None)
    return out._getvalue()


def _entries(context, builder, signature, values):
    """entry(j): a[k + j] of the argument vector a (1-d int64) at offset k."""
    vector = make_array(signature.args[0])(context, builder, values[0])
    k = context.cast(builder, values[1], signature.args[1], types.int64)

    def entry(j):
        index = builder.add(k, ir.Constant(ir.IntType(64), j))
        return builder.load(builder.gep(vector.data, [index]))

    return entry


def _is_vector(a):
    return isinstance(a, types.Array) and a.dtype == types.int64 and a.ndim == 1


def _packed_view(dtype, ndim):
    """An intrinsic view(a, k): the C-contiguous (dtype, ndim) array packed at a[k]
    (address) and a[k+1 : k+1+ndim] (shape) of the argument vector a (1-d int64).

    Built in LLVM, not as an inlined njit helper over numba.carray: numba inlines such a
    helper by copying and re-typing its IR at every call site, ~0.03 s of compile each
    (a part has 2-5 views), where an intrinsic is typed once and lowers to a few loads."""
    array_type = types.Array(dtype, ndim, "C")

    @intrinsic
    def view(typingctx, a, k):
        if not _is_vector(a):
            return None

        def codegen(context, builder, signature, values):
            entry = _entries(context, builder, signature, values)
            item = context.get_data_type(dtype)
            data = builder.inttoptr(entry(0), item.as_pointer())
            return _c_array(context, builder, array_type, data,
                            [entry(1 + j) for j in range(ndim)])

        return array_type(a, k), codegen

    return view


@intrinsic
def f32_run(typingctx, a, k, offset, n):
    """n floats from element `offset` of the float32 array packed at a[k] (a 1-d view:
    a thread's block of an optimizer update), built as _packed_view's views are."""
    if not _is_vector(a):
        return None
    array_type = types.Array(types.float32, 1, "C")

    def codegen(context, builder, signature, values):
        entry = _entries(context, builder, signature, values)
        start = context.cast(builder, values[2], signature.args[2], types.int64)
        count = context.cast(builder, values[3], signature.args[3], types.int64)
        base = builder.inttoptr(entry(0), ir.FloatType().as_pointer())
        return _c_array(context, builder, array_type, builder.gep(base, [start]), [count])

    return array_type(a, k, offset, n), codegen


# One per (dtype, rank) the parts use; f64 ones are float64 scratch (partial sums),
# passed in: np.empty in a compiled function compiles numba's allocator (~0.3 s).
f32_1d = _packed_view(types.float32, 1)
f32_2d = _packed_view(types.float32, 2)
f32_3d = _packed_view(types.float32, 3)
f32_4d = _packed_view(types.float32, 4)
i32_1d = _packed_view(types.int32, 1)
i32_4d = _packed_view(types.int32, 4)
f64_2d = _packed_view(types.float64, 2)


def pack(*items):
    """The int64 argument vector: a C-contiguous array -> address, shape...; an int -> itself."""
    out = []
    for item in items:
        if isinstance(item, np.ndarray):
            out.append(item.ctypes.data)
            out.extend(item.shape)
        else:
            out.append(int(item))
    return np.array(out, np.int64)


ERROR_MODEL = "numpy"


class _PartCache(FunctionCache):
    """numba's disk cache for a part, the error model in its key: numba keys a cfunc by
    its bytecode and signature only, so parts cached under another model would load."""

    skip_save = False  # the entry was just loaded (cpu/compile_ahead.py's helper saved it)

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + (("error_model", ERROR_MODEL),)

    def save_overload(self, sig, data):
        if not self.skip_save:
            super().save_overload(sig, data)


class lazy_part:
    """A part function, compiled into a cached cfunc the first time it runs.

    A real compile (not a disk-cache load) is announced as a "numba:compile" event, like a
    dispatcher's, so kernels_numba.on_first_compile and benchmarks/cold_start.py see it."""

    _PART_CTYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

    def __init__(self, py_func, sig=PART_SIG, ctype=None):
        # sig/ctype: another C signature and its ctypes prototype (cpu/sgemm_tiles.py's
        # cblas_sgemm-shaped function); `serial` and run_parts assume PART_SIG.
        self.py_func, self.sig, self.ctype = py_func, sig, ctype or self._PART_CTYPE
        self.name = f"{py_func.__module__}.{py_func.__qualname__}"
        self._cfunc = self._serial = None

    def _compile(self):
        from numba.core import event, sigutils
        from numba.core.ccallback import CFunc

        # error_model "numpy": IEEE division (x/0 is inf or NaN, as on the GPU). Numba's
        # default ("python") tests every divisor to raise ZeroDivisionError, which a cfunc
        # can only print (the part's output left half-written), and the test keeps loops
        # with a division from vectorizing (Adam on 102400 floats: 0.38 -> 0.05 ms).
        cf = CFunc(self.py_func, sigutils.normalize_signature(self.sig), locals={},
                   options={"nopython": True, "error_model": ERROR_MODEL})
        cf._cache = _PartCache(self.py_func)  # cf.enable_caching(), its key with the model
        uncached = cf._compile_uncached

        def compile_uncached():  # a disk-cache miss: compile here, or load the helper's
            compile_ahead.start()
            if not compile_ahead.claim(self.name) and compile_ahead.wait(self.name):
                cres = cf._cache.load_overload(cf._sig, cf._targetdescr.target_context)
                if cres is not None:
                    compile_ahead.loaded_from_helper.append(self.name)
                    cf._cache.skip_save = True
                    return cres
            data = {"dispatcher": self, "args": self.sig.args, "return_type": types.void}
            with event.trigger_event("numba:compile", data=data):
                return uncached()

        cf._compile_uncached = compile_uncached
        cf.compile()
        self._cfunc = cf
        self._serial = self.ctype(cf.address)

    @property
    def address(self):
        if self._cfunc is None:
            self._compile()
        return self._cfunc.address

    @property
    def function(self):
        """The compiled function as a ctypes callable of its own signature."""
        if self._serial is None:
            self._compile()
        return self._serial

    def serial(self, args):
        """The whole range on the calling thread (the same compiled code, one part)."""
        if self._serial is None:
            self._compile()
        self._serial(args.ctypes.data, 0, 1)


def run(part, args, work):
    """part over all of its range: split across threads when `work` elements are worth it."""
    if split(work):
        run_parts(part, args)
    else:
        part.serial(args)


def run_parts(part, args, parts=None):
    """Run part(args, p, parts) for p in range(parts) (default: one per thread) on numba's
    threads. `args` (from `pack`) must stay alive until this returns; it does, as a local."""
    if parts is None:
        parts = numba.get_num_threads()
    _drive(part.address, args.ctypes.data, parts)


def split(work):
    """Whether `work` elements are worth waking the thread pool for."""
    return work >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1


class Bound:
    """One call with everything decided, `fn(*args)`, holding `keep` (the arrays whose
    addresses args carry) alive: the unit of a CPU twin's bound form (`bind`), which a
    replayed launch plan calls with no argument handling (kernels_numba/launches.py)."""

    __slots__ = ("fn", "args", "keep")

    def __init__(self, fn, args, keep=()):
        self.fn, self.args, self.keep = fn, args, keep

    def __call__(self):
        self.fn(*self.args)


def part_call(part, args, parts=1, keep=()):
    """part on the packed `args` as a Bound: one block on the calling thread (parts=1) or
    `parts` blocks on numba's threads (what `run`/`run_parts`/`serial` do at once); `keep`:
    the arrays packed in args."""
    if parts == 1:
        if part._serial is None:
            part._compile()
        return Bound(part._serial, (args.ctypes.data, 0, 1), (args, *keep))
    return Bound(_drive, (part.address, args.ctypes.data, parts), (args, *keep))


def run_call(part, args, work, keep=()):
    """`run`'s work as a Bound: part over all of its range, split across threads when
    `work` elements are worth it (decided now, not when it runs)."""
    return part_call(part, args, numba.get_num_threads() if split(work) else 1, keep)


def run_all(calls):
    for call in calls:
        call()


def chain(calls):
    """A list of Bound calls as one callable."""
    return Bound(run_all, (tuple(calls),))


def bound_op(make):
    """A CPU implementation written as make(...) -> one Bound call: the op runs it at once;
    `op.bind` is make, which a replayed launch plan keeps instead of the call."""
    def op(*args, **kwargs):
        make(*args, **kwargs)()

    op.__name__, op.__qualname__, op.__doc__ = make.__name__, make.__qualname__, make.__doc__
    op.__module__, op.bind = make.__module__, make
    return op

