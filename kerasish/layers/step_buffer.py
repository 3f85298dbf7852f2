"""The step counter of the counter-based random layers (Dropout, GaussianNoise,
GaussianDropout, SpatialDropout2D): each training draw takes the next step, and seed
and step travel in checkpoints so resumed training is bit-identical.

With `step_buffer = True` (set by an engine that calls `advance_step()` before replaying
a recorded training forward) the kernels read the step from a small device buffer (one
copy per step on CUDA, none on the CPU), so the draw launches keep the same arguments
from step to step. Off by default: a plan that replays launches whose arguments repeat
(engine/launch_plan.py) would otherwise replay one draw forever; with a by-value step
the arguments change, so such a step keeps running live.
"""

import numpy as np

import kernels_numba
from kernels_numba import ops


class StepCounter:
    """Mixin (before Layer in the bases): `_seed`, `_step`, the optional step buffer.

    The layer's __init__ calls `_init_steps()`; its build sets `_seed`."""

    step_buffer = False  # read the step from a device buffer (see the module docstring)

    def _init_steps(self):
        self._seed = None
        self._step = 0
        self._steps = None  # ops.StepScalars (uint32 low/high words) the kernels read

    def _advance(self, like):
        """This draw's step for the op's `step` (then the counter advances): the int, or
        with step_buffer written into the device buffer on the device of `like`."""
        if not self.step_buffer:
            self._step += 1
            return self._step - 1
        device = kernels_numba.device_of(like)
        buf = self._steps
        if buf is None or buf.device != device:
            buf = self._steps = ops.StepScalars(2, device, np.uint32)
        ops.step_words(buf.host(), self._step)
        buf.upload()
        self._step += 1
        return buf.buffer

    def advance_step(self):
        """A replayed launch plan's half of a training forward that drew noise: the next
        step into the buffer the recorded draw launch reads (no launch here)."""
        if self._steps is None:
            raise RuntimeError(f"{type(self).__name__} {self.name}: advance_step() before "
                               f"any training forward drew noise with step_buffer=True "
                               f"(step_buffer={self.step_buffer})")
        self._advance(self._steps.buffer)

    def get_extra_state(self):
        """Seed and step, saved in checkpoints so resumed training is bit-identical."""
        return {"seed": np.int64(self._seed), "step": np.int64(self._step)}

    def set_extra_state(self, state):
        self._seed, self._step = int(state["seed"]), int(state["step"])
