"""Progress-line formats (keras-reference.md §3.1) and the Progbar display modes."""

import io
import threading

import pytest

from kerasish.utils import progbar
from kerasish.utils.progbar import (
    Progbar,
    format_bar_line,
    format_counter,
    format_epoch_line,
    format_eta,
    format_time_per_step,
    format_value,
    resolve_verbose,
)

BAR = "\u2501" * 20


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class TTYStream(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(progbar, "_clock", fake)
    return fake


# ---------------------------------------------------------------- pure functions


@pytest.mark.parametrize("seconds, text", [
    (0.0, " 0s/step"), (2.4, " 2s/step"), (1.0, " 1s/step"), (0.005, " 5ms/step"),
    (0.0875, " 88ms/step"), (0.001, " 1ms/step"), (0.0005, " 500us/step"),
    (3e-6, " 3us/step")])
def test_format_time_per_step_picks_unit_like_keras(seconds, text):
    assert format_time_per_step(seconds) == text


def test_format_value_fixed_vs_scientific():
    assert format_value(0.23456789) == "0.2346"
    assert format_value(2.3) == "2.3000"
    assert format_value(0.0005) == "5.0000e-04"
    assert format_value(0.0) == "0.0000e+00"
    assert format_value(-0.5) == "-0.5000"  # verbose=1 compares abs()
    assert format_value(-0.5, use_abs=False) == "-5.0000e-01"  # verbose=2 does not
    assert format_value("n/a") == "n/a"


def test_format_counter_is_right_aligned():
    assert format_counter(1, 57) == " 1/57"
    assert format_counter(57, 57) == "57/57"
    assert format_counter(938, 938) == "938/938"
    assert format_counter(7, 1000) == "   7/1000"
    assert format_counter(7, None) == "      7/Unknown"


def test_format_eta():
    assert format_eta(5.9) == "5s"
    assert format_eta(75) == "1:15"
    assert format_eta(3700) == "1:01:40"


def test_format_epoch_line_matches_keras_verbose2():
    logs = {"accuracy": 0.9312, "loss": 0.2345, "val_accuracy": 0.95, "val_loss": 0.15}
    line = format_epoch_line(938, 938, 5.2, logs, time_per_step=0.005)
    assert line == ("938/938 - 5s - 5ms/step - accuracy: 0.9312 - loss: 0.2345 - "
                    "val_accuracy: 0.9500 - val_loss: 0.1500")
    # time per step defaults to elapsed / steps; unknown total uses the count
    assert format_epoch_line(4, None, 0.4, {}) == "4/4 - 0s - 100ms/step"
    assert format_epoch_line(313, 313, 1.0, {"accuracy": 0.9, "loss": 0.3}, 0.003) == (
        "313/313 - 1s - 3ms/step - accuracy: 0.9000 - loss: 0.3000")


def test_format_bar_line_final_and_mid_epoch():
    logs = {"accuracy": 0.1156, "loss": 2.3021}
    final = format_bar_line(57, 57, 0.4, 0.005, logs, final=True)
    assert final == f"57/57 {BAR} 0s 5ms/step - accuracy: 0.1156 - loss: 2.3021"
    mid = format_bar_line(1, 57, 0.1, 0.015, {}, final=False)
    assert mid == " 1/57 " + "\u2500" * 20 + " 0s 15ms/step"
    half = format_bar_line(30, 60, 10.0, 2.5, {}, final=False)
    assert half.startswith("30/60 " + "\u2501" * 10 + "\u2500" * 10 + " 1:15 ")


def test_format_bar_line_ansi_matches_keras_bytes():
    logs = {"accuracy": 0.1156, "loss": 2.3021, "val_accuracy": 0.095, "val_loss": 2.3038}
    line = format_bar_line(57, 57, 0.3, 0.005, logs, final=True, ansi=True)
    expected = ("\x1b[1m57/57\x1b[0m \x1b[32m" + BAR + "\x1b[0m\x1b[37m\x1b[0m "
                "\x1b[1m0s\x1b[0m 5ms/step - accuracy: 0.1156 - loss: 2.3021 - "
                "val_accuracy: 0.0950 - val_loss: 2.3038")
    assert line == expected


def test_resolve_verbose(monkeypatch):
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert resolve_verbose("auto") == 2
    monkeypatch.setattr("sys.stdout", TTYStream())
    assert resolve_verbose("auto") == 1
    assert resolve_verbose(0) == 0 and resolve_verbose(2) == 2 and resolve_verbose(True) == 1
    with pytest.raises(ValueError, match="verbose"):
        resolve_verbose(5)
    with pytest.raises(ValueError, match="verbose"):
        resolve_verbose("yes")


# ---------------------------------------------------------------- Progbar


def test_verbose2_prints_one_line_at_the_end(clock):
    out = io.StringIO()
    bar = Progbar(3, verbose=2, stream=out)
    for step in range(1, 4):
        clock.t += 0.005
        bar.update(step, {"loss": 0.5})
    assert out.getvalue() == ""
    bar.finalize({"loss": 0.25})
    assert out.getvalue() == "3/3 - 0s - 5ms/step - loss: 0.2500\n"


def test_verbose1_not_a_tty_writes_whole_lines_only(clock):
    out = io.StringIO()
    bar = Progbar(5, verbose=1, stream=out, plain_interval=30.0)
    clock.t += 1.0  # the first step (compilation) is left out of the step time
    bar.update(1, {"loss": 1.0})
    for step in range(2, 6):
        clock.t += 0.01
        bar.update(step, {"loss": 1.0 / step})
    bar.finalize({"loss": 0.2})
    text = out.getvalue()
    assert "\r" not in text and "\b" not in text and "\x1b" not in text
    assert text == f"5/5 {BAR} 1s 10ms/step - loss: 0.2000\n"


def test_verbose1_not_a_tty_prints_progress_lines_every_interval(clock):
    out = io.StringIO()
    bar = Progbar(4, verbose=1, stream=out, plain_interval=30.0)
    for step in range(1, 5):
        clock.t += 20.0
        bar.update(step, {"loss": 1.0})
    bar.finalize({"loss": 1.0})
    lines = out.getvalue().splitlines()
    # 30 s passed at step 2 (t=40 s): one progress line with the ETA; none at step 4,
    # where the final line follows
    assert len(lines) == 2
    assert lines[0] == "2/4 " + "━" * 10 + "─" * 10 + " 40s 20s/step - loss: 1.0000"
    assert lines[1] == f"4/4 {BAR} 80s 20s/step - loss: 1.0000"


def test_unknown_target_counts_then_final_line_uses_the_count(clock):
    out = io.StringIO()
    bar = Progbar(None, verbose=2, stream=out)
    for step in range(1, 8):
        clock.t += 0.002
        bar.update(step)
    bar.seen = 7
    bar.finalize({})
    assert out.getvalue() == "7/7 - 0s - 2ms/step\n"


def test_tty_uses_a_tqdm_bar_then_prints_the_keras_line(clock):
    out = TTYStream()
    bar = Progbar(4, verbose=1, stream=out)
    assert bar._bar is not None
    for step in range(1, 5):
        clock.t += 0.01
        bar.update(step, {"accuracy": 0.5, "loss": 0.75})
    bar.finalize({"accuracy": 0.5, "loss": 0.75})
    text = out.getvalue()
    assert "\r0/4 " in text  # the live bar was drawn in place
    assert text.endswith("\n")
    last = text.rstrip("\n").rsplit("\r", 1)[-1]  # the bar was erased, then...
    assert last.endswith("10ms/step - accuracy: 0.5000 - loss: 0.7500")
    assert last.startswith("\x1b[1m4/4\x1b[0m")
    assert bar._bar is None and progbar._active_bar is None
    assert all(t.name == "MainThread" or not t.name.startswith("TMonitor")
               for t in threading.enumerate())


def test_abort_closes_the_bar_and_leaves_its_last_state(clock):
    out = TTYStream()
    bar = Progbar(10, verbose=1, stream=out)
    bar.update(3, {"loss": 1.5})
    bar.close(aborted=True)
    assert bar._bar is None and progbar._active_bar is None
    assert out.getvalue().endswith("\n")
    bar.close(aborted=True)  # idempotent
    bar.finalize({"loss": 1.0})  # no-op once closed
    assert "loss: 1.0000" not in out.getvalue()


def test_print_msg_goes_around_a_live_bar(clock, monkeypatch):
    out = TTYStream()
    monkeypatch.setattr("sys.stdout", out)
    bar = Progbar(10, verbose=1, stream=out)
    bar.update(2, {"loss": 1.5})
    progbar.print_msg("Epoch 1: hello")
    bar.finalize({"loss": 1.0})
    assert "Epoch 1: hello\n" in out.getvalue()
    progbar.print_msg("plain")
    assert out.getvalue().endswith("plain\n")


def test_stream_without_unicode_gets_an_ascii_bar(clock):
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    bar = Progbar(2, verbose=1, stream=out)
    bar.update(1)
    bar.update(2)
    bar.finalize({"loss": 0.5})
    out.seek(0)
    assert out.read().startswith("2/2 " + "=" * 20 + " 0s")


def test_jupyter_uses_the_widget_bar_and_auto_is_1(clock, monkeypatch):
    monkeypatch.setattr(progbar, "_in_jupyter", lambda: True)
    assert resolve_verbose("auto") == 1
    out = io.StringIO()  # a notebook's stdout is not a TTY
    bar = Progbar(12, verbose=1, stream=out)
    assert bar._bar is not None
    bar.update(3, {"loss": 0.5})
    assert "{bar}" in bar._bar.bar_format  # what tqdm.notebook swaps for its widget
    bar.finalize({"loss": 0.5})
    assert out.getvalue().endswith(" 0s/step - loss: 0.5000\n")
