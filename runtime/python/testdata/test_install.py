"""pip installs the written folder offline, into a virtual environment that
sees Debian's packages, and the module imports and loads from there."""

import os
import subprocess
import sys

from conftest import FIXTURES, data


def test_pip_install_offline(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", "--no-index", FIXTURES["dist"]],
        capture_output=True, text=True,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    code = f"import tokens; l = tokens.TokensLoader(files={data('tokens')['location']!r}); print(tokens.__file__, sum(len(b) for b in l.epoch(0)))"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    path, samples = r.stdout.split()
    assert path.startswith(str(venv)) and samples == "100", r.stdout
