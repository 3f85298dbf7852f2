"""Features kerasish refuses by name this round, each with the conformance case that
shows it: {case name: (feature, a fragment of kerasish's error message)}."""

REFUSALS = {
    # model_* (F1, model/training findings)
    "model_compute_loss_super": (
        "`super().compute_loss()` in a `compute_loss` override",
        "super().compute_loss() from an override"),
}
