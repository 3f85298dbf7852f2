"""Progress output in Keras 3's console formats (keras-reference.md §3.1).

The string formatting is in pure functions (`format_*`) so it can be tested without a
clock or a terminal. `Progbar` decides how to show them:

- verbose=2: one line per epoch, `938/938 - 5s - 5ms/step - accuracy: 0.9312 - ...`.
- verbose=1 on a terminal or in Jupyter: a `tqdm.auto` bar while the epoch runs (steps,
  elapsed<ETA, ms/step and the live logs), replaced at the end by Keras's final line.
- verbose=1 writing to a file or a pipe: no `\\r`/`\\b` at all. Only whole lines are
  written: the Keras final line once per epoch, plus a progress line (same format, with
  the ETA) at most every `plain_interval` seconds (30 s by default), so a long epoch in a
  batch-job log still shows it is alive while a short one prints a single line.
"""

import math
import operator
import shutil
import sys
import time
import weakref

__all__ = [
    "Progbar",
    "format_bar_line",
    "format_counter",
    "format_epoch_line",
    "format_eta",
    "format_logs",
    "format_time_per_step",
    "format_value",
    "is_interactive",
    "print_msg",
    "resolve_verbose",
]

# Looked up at call time so tests can replace it with a fake clock.
_clock = time.perf_counter

_BAR_WIDTH = 20
_BAR_CHAR = "\u2501"  # '━', Keras 3's bar character
_TODO_CHAR = "\u2500"  # '─', marks the undone part when there is no colour
_BOLD, _GREEN, _WHITE, _RESET = "\x1b[1m", "\x1b[32m", "\x1b[37m", "\x1b[0m"

# The tqdm bar currently on screen (weak, so an abandoned bar can still be collected).
_active_bar = None


# ---------------------------------------------------------------- pure formatting


def format_time_per_step(seconds, unit_name="step"):
    """Keras's `Progbar._format_time`: `' 5ms/step'` (note the leading space).

    Seconds are used at or above 1 s and for exactly 0, milliseconds at or above
    1 ms, microseconds below.
    """
    if seconds >= 1 or seconds == 0:
        return f" {seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f" {seconds * 1e3:.0f}ms/{unit_name}"
    return f" {seconds * 1e6:.0f}us/{unit_name}"


def format_value(value, use_abs=True):
    """`:.4f` above 1e-3, else `:.4e`. The verbose=2 line compares without `abs`."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    big = abs(v) > 1e-3 if use_abs else v > 1e-3
    return f"{v:.4f}" if big else f"{v:.4e}"


def format_logs(logs, use_abs=True):
    """`' - k: v'` for each key, in the order given (CallbackList sorts them)."""
    return "".join(f" - {k}: {format_value(v, use_abs)}" for k, v in (logs or {}).items())


def format_counter(current, target):
    """Right-aligned `' 7/57'`, or `'      7/Unknown'` without a known target."""
    if target:
        digits = int(math.log10(target)) + 1
        return f"%{digits}d/%d" % (current, target)
    return "%7d/Unknown" % current


def format_eta(seconds):
    """`'5s'`, `'1:15'` above a minute, `'1:01:40'` above an hour."""
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def format_epoch_line(step, steps, elapsed_s, logs, time_per_step=None, unit_name="step"):
    """The verbose=2 line, without the newline.

    Args:
        step: steps done (the counter's left side).
        steps: total steps, or None when unknown (then `step` is used).
        elapsed_s: seconds since the epoch began.
        logs: dict of values, printed in its order.
        time_per_step: seconds per step; defaults to `elapsed_s / step`.
        unit_name: `"step"`.
    """
    if time_per_step is None:
        time_per_step = elapsed_s / step if step else 0.0
    line = f"{format_counter(step, steps or step)} - {elapsed_s:.0f}s -"
    line += format_time_per_step(time_per_step, unit_name)
    return line + format_logs(logs, use_abs=False)


def format_bar_line(step, steps, elapsed_s, time_per_step, logs, *, final, ansi=False,
                    bar_char=_BAR_CHAR, todo_char=_TODO_CHAR, unit_name="step"):
    """The verbose=1 line: counter, 20-character bar, ETA (or elapsed when final), step
    time and logs. With `ansi` it carries Keras's bold/green/white codes; without, the
    undone part of the bar uses `todo_char` since there is no colour to tell them apart.
    """
    counter = format_counter(step, steps)
    if steps:
        done = int(_BAR_WIDTH * min(step / steps, 1.0))
        if ansi:
            bar = f"{_BOLD}{counter}{_RESET} "
            if done:
                bar += f"{_GREEN}{bar_char * done}{_RESET}"
            bar += f"{_WHITE}{bar_char * (_BAR_WIDTH - done)}{_RESET}"
        else:
            bar = f"{counter} {bar_char * done}{todo_char * (_BAR_WIDTH - done)}"
    else:
        bar = counter
    if steps and not final:
        clock = format_eta(time_per_step * (steps - step))
    else:
        clock = f"{elapsed_s:.0f}s"
    info = f" {_BOLD}{clock}{_RESET}" if ansi else f" {clock}"
    return bar + info + format_time_per_step(time_per_step, unit_name) + format_logs(logs)


# ---------------------------------------------------------------- environment


def _in_jupyter():
    ipython = sys.modules.get("IPython")
    if ipython is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # an odd IPython: treat as a console
        return False


def _isatty(stream):
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def is_interactive(stream=None):
    """True on a terminal or in Jupyter, where an in-place bar makes sense."""
    return _in_jupyter() or _isatty(sys.stdout if stream is None else stream)


def resolve_verbose(verbose):
    """`'auto'` -> 1 when interactive, else 2; 0, 1 and 2 are returned as ints."""
    if verbose == "auto":
        return 1 if is_interactive() else 2
    try:
        level = operator.index(verbose)
    except TypeError:
        level = None
    if level not in (0, 1, 2):
        raise ValueError(f"verbose: expected 'auto', 0, 1 or 2; received {verbose!r}")
    return level


def print_msg(message, line_break=True):
    """Print to stdout without breaking a live tqdm bar (it is cleared and redrawn)."""
    end = "\n" if line_break else ""
    bar = _active_bar() if _active_bar is not None else None
    if bar is not None and not bar.disable:
        bar.write(message, file=bar.fp, end=end)
        return
    sys.stdout.write(message + end)
    sys.stdout.flush()


def _encodable(stream, text):
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


_bar_class = None


def _tqdm_class():
    """`tqdm.auto.tqdm` without the monitor thread, so no thread outlives a bar."""
    global _bar_class
    if _bar_class is None:
        from tqdm.auto import tqdm

        _bar_class = type("KerasishBar", (tqdm,), {"monitor_interval": 0})
    return _bar_class


# ---------------------------------------------------------------- the bar


class Progbar:
    """One epoch (or one evaluate/predict pass) of progress output.

    Args:
        target: total steps, or None when unknown.
        verbose: 1 (bar) or 2 (one line at the end); 0 prints nothing.
        unit_name: `"step"`.
        stream: where to write; `sys.stdout` (looked up now) by default.
        interval: seconds between bar refreshes on a terminal.
        plain_interval: seconds between progress lines when not interactive.
        dynamic: force (True) or forbid (False) the tqdm bar; None detects it.
    """

    def __init__(self, target, verbose=1, unit_name="step", *, stream=None,
                 interval=0.1, plain_interval=30.0, dynamic=None):
        self.target = target or None
        self.verbose = verbose
        self.unit_name = unit_name
        self.stream = sys.stdout if stream is None else stream
        self.interval = interval
        self.plain_interval = plain_interval
        self.dynamic = is_interactive(self.stream) if dynamic is None else dynamic
        self.seen = 0
        self._start = _clock()
        self._after_first_step = None
        self._last_refresh = -math.inf
        self._last_plain = self._start
        self._closed = False
        self._bar = None
        self._ncols = None
        self._bar_char = _BAR_CHAR if _encodable(self.stream, _BAR_CHAR) else "="
        self._todo_char = _TODO_CHAR if _encodable(self.stream, _TODO_CHAR) else "-"
        if verbose == 1 and self.dynamic:
            self._open_bar()

    def _open_bar(self):
        global _active_bar
        previous = _active_bar() if _active_bar is not None else None
        if previous is not None:  # left open by an interrupted loop
            previous.close()
        # Explicit sizes: some ptys report 0x0 and tqdm then draws nothing; shutil
        # falls back to 80x24. (In Jupyter ncols would size the widget in px.)
        size = shutil.get_terminal_size()
        self._ncols = None if _in_jupyter() else size.columns
        sizes = {} if self._ncols is None else {"ncols": size.columns, "nrows": size.lines}
        self._bar = _tqdm_class()(
            total=self.target, file=self.stream, leave=False, bar_format=self._bar_format(0),
            mininterval=self.interval, unit=self.unit_name, **sizes)
        _active_bar = weakref.ref(self._bar)

    def _bar_format(self, postfix_len):
        """tqdm's format: right-aligned counter like Keras, and a bar that shrinks
        (20 down to 5 characters) so the logs fit on one terminal line."""
        if self.target is None:
            return "{n_fmt}/Unknown {elapsed}{postfix}"
        digits = len(str(self.target))
        bar = "{bar}"  # the Jupyter widget replaces exactly this with its own bar
        if self._ncols:
            # counter, spaces, "mm:ss<mm:ss", ", " then the postfix
            rest = 2 * digits + 1 + 1 + 1 + 11 + 2 + postfix_len
            bar = "{bar:%d}" % max(5, min(_BAR_WIDTH, self._ncols - 1 - rest))
        return f"{{n:>{digits}d}}/{{total_fmt}} {bar} {{elapsed}}<{{remaining}}{{postfix}}"

    def _step_time(self, current, now):
        # Keras: once past step 1, the first step (compilation) is left out.
        if not current:
            return 0.0
        if self._after_first_step is not None and current > 1:
            per_step = (now - self._after_first_step) / (current - 1)
        else:
            per_step = (now - self._start) / current
        if current == 1:
            self._after_first_step = now
        return per_step

    def update(self, current, logs=None):
        """Record that `current` steps are done; `logs` are the running values."""
        if self.verbose != 1 or self._closed:
            return
        delta, self.seen = current - self.seen, current
        now = _clock()
        per_step = self._step_time(current, now)
        if self._bar is not None:
            if now - self._last_refresh >= self.interval:
                self._last_refresh = now
                # tqdm puts ", " before the postfix: "00:03<00:07, 5ms/step - loss: ..."
                text = format_time_per_step(per_step, self.unit_name).lstrip()
                text += format_logs(logs)
                self._bar.bar_format = self._bar_format(len(text))
                self._bar.set_postfix_str(text, refresh=False)
            self._bar.update(delta)
        elif now - self._last_plain >= self.plain_interval and not (
                self.target and current >= self.target):  # the final line follows
            self._last_plain = now
            line = format_bar_line(current, self.target, now - self._start, per_step, logs,
                                   final=False, bar_char=self._bar_char,
                                   todo_char=self._todo_char, unit_name=self.unit_name)
            self._write(line)

    def finalize(self, logs=None):
        """Print the end-of-pass line with the final logs and close the bar."""
        if self._closed:
            return
        target = self.target or self.seen
        now = _clock()
        if self.verbose == 1:
            per_step = self._step_time(target, now)
            ansi = self._bar is not None
            self.close()
            self._write(format_bar_line(
                target, target, now - self._start, per_step, logs, final=True, ansi=ansi,
                bar_char=self._bar_char, todo_char=self._todo_char, unit_name=self.unit_name))
        elif self.verbose == 2:
            per_step = self._step_time(target, now)
            self._write(format_epoch_line(target, target, now - self._start, logs,
                                          per_step, self.unit_name))
        self._closed = True

    def close(self, aborted=False):
        """Take the bar off the screen. After an interruption (`aborted`), its last
        state stays visible so the user sees where it stopped. Idempotent."""
        global _active_bar
        self._closed = True
        bar, self._bar = self._bar, None
        if bar is None:
            return
        if _active_bar is not None and _active_bar() is bar:
            _active_bar = None
        if aborted:
            bar.leave = True
        bar.close()

    def _write(self, line):
        self.stream.write(line + "\n")
        self.stream.flush()
