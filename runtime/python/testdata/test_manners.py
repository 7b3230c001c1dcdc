"""Errors, logging, fork, Ctrl-C and leaks: a Python user's expectations."""

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

import _loadergen
import photos
import tokens
from conftest import FIXTURES, data, open_loader


def test_open_error_names_the_path(tmp_path):
    with pytest.raises(_loadergen.LoaderError, match=str(tmp_path)):
        tokens.TokensLoader(files=tmp_path)


def test_bad_option():
    with pytest.raises(_loadergen.LoaderError, match="workers"):
        open_loader("tokens", workers=-1)
    with pytest.raises(TypeError):
        open_loader("tokens", wrkers=2)


def test_read_error_names_the_sample():
    with photos.PhotosLoader(records=FIXTURES["bad_records"], workers=2) as loader:
        with pytest.raises(_loadergen.ReadError) as e:
            for _ in loader.epoch(0):
                pass
    assert e.value.index == 5 and e.value.batch is not None
    assert "000005" in str(e.value) and "photos-0.tar" in str(e.value)


def test_one_epoch_at_a_time():
    with open_loader("tokens") as loader:
        it = iter(loader.epoch(0))
        next(it)
        with pytest.raises(_loadergen.BusyError):
            next(iter(loader.epoch(1)))
        it.close()  # ends the first: the next may start
        assert sum(1 for _ in loader.epoch(1)) == len(loader)


def test_logs_go_to_logging(caplog):
    with caplog.at_level(logging.INFO, logger="loadergen"):
        with open_loader("tokens", log_epochs=True) as loader:
            for _ in loader.epoch(0):
                pass
    lines = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert any(n == "loadergen.tokens" and lv == logging.INFO and "Tokens loader: batch 32" in m for n, lv, m in lines), lines
    assert any("Tokens epoch 0" in m for _, _, m in lines), lines


def child(tmp_path, code):
    """Runs code as a script in a fresh python3 that imports the package
    under test (a file: spawned children import it again)."""
    script = tmp_path / "child.py"
    script.write_text(f"import sys\nsys.path.insert(0, {FIXTURES['dist']!r})\n" + textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("keep", [False, True])
def test_trace_is_complete(tmp_path, keep):
    # With keep, the loop's variable holds the last batch past close(): the
    # loader completes the trace when that batch is released.
    path = tmp_path / "trace.json"
    with open_loader("tokens", trace=path) as loader:
        for b in loader.epoch(0):
            pass
        if not keep:
            del b
    if keep:
        del b
    events = json.loads(path.read_text())
    assert {e.get("name") for e in events} >= {"fill", "wait"}


def test_forked_child_gets_a_clear_error(tmp_path):
    r = child(
        tmp_path,
        f"""
        import os, tokens
        loader = tokens.TokensLoader(files={data('tokens')['location']!r})
        b = next(iter(loader.epoch(0)))
        pid = os.fork()
        if pid == 0:
            try:
                next(iter(loader.epoch(1)))
                os._exit(3)
            except tokens.ForkedError as e:
                print("child:", e, flush=True)
            del b  # releasing in the child must not touch Go
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        del b
        print("parent batches", sum(1 for _ in loader.epoch(1)))
        """
    )
    assert r.returncode == 0, r.stderr
    assert "child: this process was forked" in r.stdout and "spawn" in r.stdout
    assert "child exit 0" in r.stdout and "parent batches 4" in r.stdout


def test_spawned_children_work(tmp_path):
    r = child(
        tmp_path,
        f"""
        import multiprocessing as mp
        def run(root):
            import tokens
            with tokens.TokensLoader(files=root) as l:
                return sum(len(b) for b in l.epoch(0))
        if __name__ == "__main__":
            import tokens
            with tokens.TokensLoader(files={data('tokens')['location']!r}) as l:
                next(iter(l.epoch(0)))
            with mp.get_context("spawn").Pool(2) as p:
                print("samples", p.map(run, [{data('tokens')['location']!r}] * 2))
        """
    )
    assert r.returncode == 0, r.stderr
    assert "samples [100, 100]" in r.stdout


def test_ctrl_c_interrupts_a_wait():
    """SIGINT while the loader waits on a slow server: KeyboardInterrupt
    within 0.2 s; close() returns at once (the epoch's reads are cancelled),
    and nothing is left running."""
    base = FIXTURES["slow_records"]
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time, urllib.request
            sys.path.insert(0, {FIXTURES['dist']!r})
            import photos
            loader = photos.PhotosLoader(records={base!r}, workers=1, prefetch=1)
            urllib.request.urlopen(urllib.request.Request({base!r} + "/delay?ms=3000", method="POST")).read()
            try:
                print("waiting", flush=True)
                for b in loader.epoch(0):
                    pass
            except KeyboardInterrupt:
                print("interrupted", time.monotonic(), flush=True)
            loader.close()
            print("closed", time.monotonic(), flush=True)
            cpu = time.process_time()
            time.sleep(1)
            print("cpu", time.process_time() - cpu, flush=True)
        """)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.5)  # well inside the first 3 s answer
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        urllib.request.urlopen(urllib.request.Request(base + "/delay?ms=0", method="POST")).read()
    lines = dict(l.split(" ", 1) for l in out.splitlines())
    assert "interrupted" in lines, (out, err)
    assert float(lines["interrupted"]) - sent < 0.2, (out, err)
    assert float(lines["closed"]) - float(lines["interrupted"]) < 0.5, (out, err)
    assert float(lines["cpu"]) < 0.05, (out, err)  # the process idles: no fill, no retry
    assert proc.returncode == 0, err


def test_in_loader_is_the_loops_wait():
    """stats()["in_loader"] is the time the Python loop waited in the
    library: most of an epoch read from a slow server, little of one whose
    loop is the slow part."""
    base = FIXTURES["slow_records"]
    delay = lambda ms: urllib.request.urlopen(urllib.request.Request(f"{base}/delay?ms={ms}", method="POST")).read()
    with photos.PhotosLoader(records=base, workers=1, prefetch=1) as loader:
        delay(20)
        try:
            t0 = time.monotonic()
            n = sum(1 for _ in loader.epoch(0))
            wall = time.monotonic() - t0
        finally:
            delay(0)
        assert n == len(loader)
        waited = loader.stats()["in_loader"]
        assert 0.5 * wall < waited <= wall, (waited, wall)
        t0 = time.monotonic()
        for _ in loader.epoch(1):
            time.sleep(0.05)
        wall = time.monotonic() - t0
        waited = loader.stats()["in_loader"] - waited
        assert waited < 0.2 * wall, (waited, wall)


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024


def test_no_growth_over_1000_epochs():
    with open_loader("tokens", workers=2) as loader:
        for e in range(100):
            for b in loader.epoch(e):
                b.torch()
        before = rss()
        for e in range(100, 1100):
            for b in loader.epoch(e):
                b.torch()
        grown = rss() - before
    assert grown < 8 << 20, f"RSS grew {grown >> 20} MiB over 1000 epochs"


def test_close_releases_everything():
    def cycle():
        for _ in range(20):
            with open_loader("tokens") as loader:
                for b in loader.epoch(0):
                    b.numpy()
    cycle()
    before, handles = rss(), _loadergen._process()["handles"]
    for _ in range(5):
        cycle()
    grown = rss() - before
    assert grown < 8 << 20, f"RSS grew {grown >> 20} MiB over 100 loaders"
    assert _loadergen._process()["handles"] == handles


def test_close_from_another_thread():
    """close() on another thread ends an epoch being iterated with
    ClosedError, and returns."""
    import threading

    loader = open_loader("cellmap", workers=1)
    it = iter(loader.epoch(0))
    next(it)
    t = threading.Thread(target=loader.close)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive()
    with pytest.raises(_loadergen.ClosedError):
        for _ in it:
            pass
