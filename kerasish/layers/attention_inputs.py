"""What Keras's list-input attention layers (Attention, AdditiveAttention) share:
call([query, value(, key)], mask=[query_mask, value_mask]) checked and flattened into
one node on [query, value(, key)(, query_mask)(, value_mask)], the same kinds of
arguments on every call, Keras 3's inbound-node and build-config forms, and the shape
checks. A layer gives `_flags()`: (has_key, has_query_mask, has_value_mask, causal,
return_scores) of its calls."""


class ListInputAttention:
    """Mixin before the Layer base: `_call_flat`, `node_arguments`, `get_build_config`,
    `_check_shapes`."""

    def _check_list(self, who, inputs, mask, mask_lengths):
        """(query_mask, value_mask) of a checked call."""
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            got = f"a list of {len(inputs)}" if isinstance(inputs, (list, tuple)) else \
                type(inputs).__name__
            raise ValueError(f"{who}: expected a list [query, value] or [query, value, key]; "
                             f"received {got}")
        if mask is not None and (not isinstance(mask, (list, tuple)) or
                                 len(mask) not in mask_lengths):
            raise ValueError(f"{who}: expected mask=[query_mask, value_mask] (either may be "
                             f"None); received {mask!r}")
        return tuple(mask[:2]) if mask is not None else (None, None)

    def _call_flat(self, who, options, names, inputs, qm, vm, training, kwargs):
        """Layer.__call__ on the flat node list, once `options` equal the first call's."""
        if self._options is not None and options != self._options:
            raise ValueError(f"{who}: every call must pass the same kind of arguments "
                             f"({names}); first call {self._options}, this call {options}")
        self._options = options
        tensors = list(inputs) + [m for m in (qm, vm) if m is not None]
        self._flat_call = True
        try:
            return super().__call__(tensors, training=training, **kwargs)
        finally:
            self._flat_call = False

    def node_arguments(self, inputs):
        """Keras 3's inbound-node form: ([[query, value(, key)]], {"mask": [qm, vm], ...})."""
        has_key, has_qm, has_vm, causal, scores = self._flags()
        n = 3 if has_key else 2
        kwargs = {}
        if has_qm or has_vm:
            kwargs["mask"] = [inputs[n] if has_qm else None, inputs[-1] if has_vm else None]
        if causal:
            kwargs["use_causal_mask"] = True
        if scores:
            kwargs["return_attention_scores"] = True
        return [list(inputs[:n])], kwargs

    def get_build_config(self):
        """Keras's build_config: the [query, value(, key)] shapes (masks are call
        arguments, not build shapes)."""
        if not self.built:
            return None
        n = 3 if self._flags()[0] else 2
        return {"input_shape": [list(s) for s in self.input_shape[:n]]}

    def _check_shapes(self, who, q, k, v, qm, vm):
        if len(q) != 3 or len(v) != 3 or len(k) != 3 or None in q[1:] + v[1:] + k[1:] or \
                q[2] != k[2] or k[1] != v[1]:
            raise ValueError(f"{who}: expected query (batch, Tq, dim), value (batch, Tv, "
                             f"dim_v), key (batch, Tv, dim), sizes known; received "
                             f"{[q, v, k]}")
        for arg, m, want in (("query_mask", qm, q[1]), ("value_mask", vm, v[1])):
            if m is not None and tuple(m[1:]) != (want,):
                raise ValueError(f"{who}: expected {arg} of shape (batch, {want}); received "
                                 f"{m}")
        return q, k, v
