"""Features kerasish refuses by name this round, each with the conformance case that
shows it: {case name: (feature, a fragment of kerasish's error message)}."""

REFUSALS = {
    # model_* (F1, model/training findings)
    "model_compute_loss_two_outputs": (
        "a `compute_loss` override in a model with several outputs",
        "a compute_loss override with several outputs is not supported yet"),
    # layer_ (F2)
    "layer_rnn_stateful": ("`stateful`/`unroll` RNNs", "stateful=True is not supported"),
    "layer_rnn_explicit_mask": ("explicit `mask=` in a layer call",
                                "explicit masks are not supported"),
    "layer_custom_mask_producer": ("custom layers computing a mask (`compute_mask`)",
                                   "compute_mask override that computes a new mask"),
    "layer_custom_call_reads_mask": ("reading the mask in a custom layer's `call(mask=)`",
                                     "reading the mask inside a custom layer's call(mask=)"),
    "layer_rnn_custom_cell_mask": ("a mask with a custom cell in `keras.layers.RNN`",
                                   "a mask with a custom cell in keras.layers.RNN"),
}
