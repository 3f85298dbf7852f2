"""The dropout bookkeeping Keras's attention layers share (MultiHeadAttention, Attention,
AdditiveAttention): the forward's (rate, seed, step) for the fused ops, kept so the
backward regenerates the same keep mask; seeds and steps as Dropout's (StepCounter)."""

from kerasish import random as kr
from kerasish.layers.core import _seed, check_number
from kerasish.layers.step_buffer import StepCounter


class _AttentionDropout(StepCounter):
    """Dropout bookkeeping of the attention layers: this forward's (rate, seed, step)
    keyword arguments for ops.attention_forward, kept so the backward regenerates the
    same mask (step: the int, or the device steps buffer, which holds this step until
    the next training forward advances it)."""

    def _init_dropout(self, who, dropout, seed):
        self.dropout = check_number(who, "dropout", dropout, "in [0, 1)",
                                    lambda v: 0 <= v < 1)
        self.seed = _seed(who, seed)
        self._init_steps()
        self._drop = {}

    def _build_seed(self):
        self._seed = int(self.seed) if self.seed is not None else kr.new_seed()

    def _dropout_args(self, training, like):
        self._drop = {}
        if training and self.dropout > 0:
            self._drop = {"dropout_rate": self.dropout, "seed": self._seed,
                          "step": self._advance(like)}
        return self._drop
