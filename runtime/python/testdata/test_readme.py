"""The training loops of the README's "From PyTorch" and docs/PYTHON.md run
as written, on the example's synthetic volumes."""

import os
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, data

MARKER = "<!-- checked by runtime/python/testdata/test_readme.py -->"


def blocks():
    repo = os.environ["LOADERGEN_REPO"]
    for doc in ("README.md", "docs/PYTHON.md"):
        text = open(os.path.join(repo, doc)).read()
        found = re.findall(re.escape(MARKER) + r"\n```python\n(.*?)```", text, re.S)
        assert len(found) == 1, f"{doc}: want one python block after the marker, found {len(found)}"
        yield doc, found[0]


@pytest.mark.parametrize("doc,code", list(blocks()))
def test_training_loop_runs(doc, code, tmp_path):
    code = code.replace("/data/cellmap/volumes.csv", data("cellmap")["location"])
    script = tmp_path / "train.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=FIXTURES["dist"])
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, f"{doc}:\n{r.stdout}\n{r.stderr}"
    assert re.findall(r"epoch \d: loss [0-9.]+", r.stdout) and len(r.stdout.splitlines()) == 2, r.stdout
