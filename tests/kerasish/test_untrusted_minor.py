"""Issue 40 item 10: a 5,000-digit integer in config.json is refused naming the file;
a `.keras` load killed by SIGKILL leaves a temporary directory that the next load
removes; `Lambda` configs are refused by name whatever `safe_mode` says. (The
oversize attribute is in test_untrusted_h5_structure.py.)"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import zipfile

import pytest

import kerasish
from kerasish.saving import keras_format


def _model():
    layers = kerasish.layers
    return kerasish.Sequential([layers.Input((3,)), layers.Dense(2, name="d")], name="m")


def _rewrite_config(src, dst, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "config.json":
                data = edit(data.decode())
                data = data.encode() if isinstance(data, str) else data
            zout.writestr(name, data)
    return dst


def test_huge_integer_in_config_names_the_file(tmp_path):
    src = str(tmp_path / "m.keras")
    _model().save(src)
    dst = _rewrite_config(src, str(tmp_path / "int.keras"),
                          lambda text: text.replace('"units": 2', '"units": ' + "9" * 5000))
    with pytest.raises(ValueError, match="config.json") as e:
        kerasish.saving.load_model(dst)
    assert dst in str(e.value) and "digits" in str(e.value)


@pytest.mark.parametrize("safe_mode", [True, False])
def test_lambda_configs_are_refused_by_name_in_both_modes(tmp_path, safe_mode):
    src = str(tmp_path / "m.keras")
    _model().save(src)
    lam = {"module": "keras.layers", "class_name": "Lambda", "registered_name": None,
           "config": {"name": "lam", "function": {"class_name": "__lambda__", "config": {
               "code": "4wEAAAAAAAAAAAAAAAEAAAACAAAAQwAAAHMEAAAAfABTAKkBTqkAqQHaAXhyAgAAAHIC",
               "defaults": None, "closure": None}}}}

    def edit(text):
        config = json.loads(text)
        config["config"]["layers"].append(lam)
        return json.dumps(config)

    dst = _rewrite_config(src, str(tmp_path / "lambda.keras"), edit)
    with pytest.raises(ValueError, match="Lambda layer") as e:
        kerasish.saving.load_model(dst, safe_mode=safe_mode)
    assert dst in str(e.value)


_KILLED_LOAD = textwrap.dedent("""
    import os, signal, sys
    from kerasish.saving import h5_format, keras_format
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    h5_format.read_native_weights = die
    keras_format.load_model(sys.argv[1])
""")


def test_temp_dir_of_a_killed_load_is_removed_by_the_next(tmp_path):
    path = str(tmp_path / "m.keras")
    _model().save(path)
    root = tempfile.gettempdir()
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=here, KERASISH_DEVICE="cpu")
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_LOAD, path], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    prefix = f"{keras_format._TEMP_PREFIX}{proc.pid}-"  # that process's, no one else's
    left = [e for e in os.listdir(root) if e.startswith(prefix)]
    assert len(left) == 1  # SIGKILL ran no cleanup
    kerasish.saving.load_model(path)
    assert not os.path.exists(os.path.join(root, left[0]))
