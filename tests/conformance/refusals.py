"""Features kerasish refuses by name this round, each with the conformance case that
shows it: {case name: (feature, a fragment of kerasish's error message)}."""

REFUSALS = {
    # model_* (F1, model/training findings)
    "model_compute_loss_two_outputs": (
        "a `compute_loss` override in a model with several outputs",
        "a compute_loss override with several outputs is not supported yet"),
}
