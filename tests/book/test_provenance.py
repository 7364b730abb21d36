"""The provenance's hardware line names the GPU without importing torch (1.5-2 s of every
command that executes a notebook): torch where the process has it already, else the driver's
``nvidia-smi``, honouring ``CUDA_VISIBLE_DEVICES`` as CUDA does."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from dsmlib.book.execute.provenance import gpu_name, hardware


@pytest.fixture
def smi(tmp_path, monkeypatch) -> Path:
    """A fake ``nvidia-smi`` first on the PATH that logs its arguments and names two GPUs by
    index; torch is hidden from the process's modules."""
    log = tmp_path / "args"
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(f"#!/bin/sh\necho \"$@\" > {log}\n"
                   "case \"$*\" in *'-i 0'*) echo 'NVIDIA H200';; *'-i 1'*) echo 'NVIDIA H100';;"
                   " *) exit 6;; esac\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{exe.parent}:/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    return log


def test_the_driver_names_the_first_visible_gpu(smi):
    assert gpu_name() == "NVIDIA H200"
    assert "--query-gpu=name" in smi.read_text() and "-i 0" in smi.read_text()
    assert hardware()["gpu"] == "NVIDIA H200"
    assert "torch" not in sys.modules


@pytest.mark.parametrize("visible, want", [("1,0", "NVIDIA H100"), ("0", "NVIDIA H200"),
                                           ("", None), ("-1", None), ("7", None)])
def test_cuda_visible_devices_is_honoured(smi, monkeypatch, visible, want):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert gpu_name() == want


def test_no_driver_no_gpu(smi, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert gpu_name() is None


def test_torch_is_asked_where_the_process_has_it(smi, monkeypatch):
    cuda = types.SimpleNamespace(is_available=lambda: False, get_device_name=lambda i: "x")
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    assert gpu_name() is None and not smi.exists()
    cuda.is_available = lambda: True
    assert gpu_name() == "x"
