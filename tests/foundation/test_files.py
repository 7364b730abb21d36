"""Atomic writes: whole or nothing, with the permissions an ordinary write would give."""
from __future__ import annotations

import os
import stat

import pytest

from dsmlib.foundation.files import atomic_write, atomic_write_text


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_new_file_takes_the_umask_mode(tmp_path, mask):
    """Published notebooks and results were created 0600 (mkstemp's mode): a reader of the
    site or another user of the clone could not read them (issue 46, item 10)."""
    old = os.umask(mask)
    try:
        path = atomic_write_text(tmp_path / "sub" / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert path.read_text() == "{}"


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = atomic_write_text(tmp_path / "r.json", "old")

    def fail(p):
        p.write_text("half")
        raise RuntimeError("killed")
    with pytest.raises(RuntimeError):
        atomic_write(path, fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
