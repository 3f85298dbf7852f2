"""Expected refusals: cases whose kerasish run must raise an error naming the feature.

REFUSALS = {"<case name>": ("<feature, as the README names it>", "<fragment of kerasish's
error message>")}; a listed case that starts passing is a harness failure.
"""

REFUSALS = {
    # -- E (api_*) --
    "api_refuse_adafactor_clipping": ("gradient clipping with Adafactor",
                                      "Adafactor: gradient clipping is not supported"),
    "api_refuse_random_integers_traced": ("integer keras.random draws inside call()",
                                          "keras.random.randint inside a traced call()"),
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
