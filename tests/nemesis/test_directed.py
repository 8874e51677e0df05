"""The nemesis's directed scenarios (directed.py), each a process of its
own: it enters network namespaces, which a test process must not."""

import os
import subprocess
import sys

import pytest

DIRECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "directed.py")


@pytest.mark.parametrize("scenario", ["minority-follower"])
def test_directed(scenario):
    r = subprocess.run([sys.executable, DIRECTED, scenario], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
