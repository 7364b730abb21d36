"""A stale reference says what changed since it ran (issue 33: Section 5's notice said only
that the content key differs): the files of its kernel's code that changed, computing or only
drawing, the notebook, the parameters, and what -dirty means."""
from __future__ import annotations

import subprocess
from pathlib import Path

from dsmlib.book.references.freshness import changed_files, stale_reason


def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "book"
    for rel in ("dsmlib/models/engine.py", "dsmlib/figures/sec5.py", "dsmlib/theory/x.py",
                "notebooks/sec5.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("a = 1\n")
    git = lambda *a: subprocess.run(["git", *a], cwd=root, check=True,  # noqa: E731
                                    capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first")
    return root, git("rev-parse", "--short=12", "HEAD")


def test_a_stale_reference_names_what_changed_and_whether_it_computes(tmp_path):
    root, sha = repo(tmp_path)
    code = [root / "dsmlib/models/engine.py", root / "dsmlib/figures/sec5.py"]
    src = root / "notebooks/sec5.md"
    assert changed_files(root, sha, [*code, src]) == []
    (root / "dsmlib/figures/sec5.py").write_text("a = 2\n")
    (root / "dsmlib/theory/x.py").write_text("a = 2\n")          # not the run's code: unnamed
    why = stale_reason(root, sha, code, src, {"x": 1}, {"x": 1})
    assert why == (f"Since commit <code>{sha}</code>, 1 file that only draw them changed: "
                   "<code>dsmlib/figures/sec5.py</code>. Only how the numbers are drawn "
                   "changed, not how they are computed.")
    (root / "dsmlib/models/engine.py").write_text("a = 3\n")
    src.write_text("# changed\n")
    why = stale_reason(root, sha + "-dirty", code, src, {"x": 1}, {"x": 2})
    assert "1 file of the code the run went through to compute and record its numbers " \
           "changed: <code>dsmlib/models/engine.py</code>" in why
    assert "the notebook itself changed" in why and "Only how" not in why
    assert "parameters have changed too" in why and "uncommitted changes" in why


def test_without_the_commit_it_says_it_cannot_tell(tmp_path):
    root = tmp_path / "nogit"
    root.mkdir()
    (root / "nb.md").write_text("")
    assert changed_files(root, "abc", [root / "nb.md"]) is None
    why = stale_reason(root, "abc123", [], root / "nb.md", {}, {})
    assert why.startswith("What changed since commit <code>abc123</code> cannot be listed here")


def test_a_dirty_commit_is_explained_where_it_is_shown():
    """"97a6286ad896-dirty" cannot be checked out: the provenance line says what -dirty means."""
    from dsmlib.book.execute.provenance_html import provenance_line
    p = {"profile": "gpu", "wall_s": 238.0, "commit": "97a6286ad896-dirty",
         "hardware": {"cpu": "x", "cpu_count": 16, "gpu": "NVIDIA H100"},
         "versions": {"python": "3.12", "numpy": "2", "torch": "2.11"}}
    assert "executed with uncommitted changes, so that commit alone does not reproduce it" \
        in provenance_line(p)
    assert "uncommitted" not in provenance_line({**p, "commit": "97a6286ad896"})


def test_the_stale_notice_on_the_page_says_what_changed():
    from dsmlib.book.references.section import reference_cells
    from dsmlib.book.references.stored import Reference
    prov = {"profile": "gpu", "wall_s": 1.0, "commit": "abc",
            "hardware": {"cpu": "x", "cpu_count": 2, "gpu": None},
            "versions": {"python": "3", "numpy": "2", "torch": "2"}}
    ref = Reference("gpu", "sec5_distillation", {"claims": []}, prov, "k", False, Path("x"),
                    reason="Since commit <code>abc</code>, the notebook itself changed.")
    notice = reference_cells({"cells": []}, ref)[0]["source"]
    assert "Stale." in notice and "Since commit <code>abc</code>, the notebook itself changed." \
        in notice
