"""Shared fixtures for the pytest suite of the Python binding.

Run by ctest (one test per file, PYTHONPATH = <build>/python), or by hand:
    PYTHONPATH=build/python .venv/bin/python -m pytest tests/python
The oracles are numpy and PyTorch from Debian (the venv sees them through
--system-site-packages); a test that needs one skips when it is missing.
"""
import os
import resource

import pytest

import wick  # noqa: F401  (fails the whole file early when the module is not built)


@pytest.fixture(scope="session")
def np():
    return pytest.importorskip("numpy")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


def rss_mb():
    """Resident set size now, in MiB (from /proc: ru_maxrss is the peak)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / (1 << 20)


@pytest.fixture
def rss():
    return rss_mb


@pytest.fixture(scope="session")
def source_dir():
    return os.environ.get("WICK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
