"""Issue 40 items 7 and 8: building a Sequential of N layers and loading a Functional
config listed in reverse order are linear in N. Counted, not timed: the Python function
calls (sys.setprofile "call" events, generator resumptions included) for 2N layers must
be about twice those for N (a quadratic assembly gives about four times)."""

import sys

import pytest

import kerasish
from kerasish import layers

N = 150


def _calls(fn):
    count = [0]

    def profile(frame, event, arg):
        if event == "call":
            count[0] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count[0]


def _ratio(make):
    make(N // 10)  # first use imports lazily: not part of the count
    small, big = _calls(lambda: make(N)), _calls(lambda: make(2 * N))
    return big / small


def test_sequential_add_is_linear():
    def make(n):
        model = kerasish.Sequential([layers.Input((2,))])
        for i in range(n):
            model.add(layers.Activation("relu", name=f"a{i}"))

    assert _ratio(make) < 2.5


def test_sequential_from_config_is_linear():
    def config(n):
        return kerasish.Sequential([layers.Input((2,))] + [
            layers.Activation("relu", name=f"a{i}") for i in range(n)]).get_config()

    configs = {n: config(n) for n in (N // 10, N, 2 * N)}
    assert _ratio(lambda n: kerasish.Sequential.from_config(configs[n])) < 2.5


def _reversed_functional_config(n):
    x = inp = kerasish.Input((2,), name="inp")
    for i in range(n):
        x = layers.Activation("relu", name=f"a{i}")(x)
    config = kerasish.Model(inp, x).get_config()
    config["layers"] = config["layers"][::-1]  # every node's input comes later
    return config


def test_functional_config_in_reverse_order_is_linear():
    configs = {n: _reversed_functional_config(n) for n in (N // 10, N, 2 * N)}
    assert _ratio(lambda n: kerasish.Model.from_config(configs[n])) < 2.5
    model = kerasish.Model.from_config(configs[N])
    assert [layer.name for layer in model.layers][1:4] == ["a0", "a1", "a2"]


def test_duplicate_names_still_refused():
    model = kerasish.Sequential([layers.Input((2,)), layers.Activation("relu", name="x")])
    with pytest.raises(ValueError, match="unique names"):
        model.add(layers.Activation("relu", name="x"))
    model.layers[0].name = "y"  # renamed after it was added: "x" is free again
    model.add(layers.Activation("relu", name="x"))
