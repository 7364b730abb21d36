"""The README's plain papermill command runs, and says where its results went (issue 71, item
7: the README named no notebook, ``papermill notebooks/ols.md ...`` failed with NotJSONError,
and a reader found no word of where the results went).

The command is read from README.md and run as written on the session's smoke book (the tests
build it under ``smoke``; ``make book`` under ``quick``, which the command names): in a copy of
the book's sources holding the smoke execution of the chapter it names."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from dsmlib.foundation.handoff import parameters_hash
from dsmlib.book.execute.store import executed_path
from helpers import ROOT, book_env, copy_book

README = (ROOT / "README.md").read_text()


def readme_papermill() -> list[str]:
    """The README's plain papermill command, as words."""
    [command] = re.findall(r"`(papermill [^`]+)`", re.sub(r"\s+", " ", README))
    return shlex.split(command)


def test_the_readmes_papermill_command_runs_and_says_where(smoke_book, tmp_path):
    words = readme_papermill()
    notebook, out = Path(words[1]), words[2]
    chapter = notebook.stem
    assert notebook == executed_path(Path("."), "quick", chapter)    # what `make book` writes
    root = copy_book(tmp_path / "book")
    smoke = executed_path(root, "smoke", chapter)
    smoke.parent.mkdir(parents=True)
    shutil.copy(executed_path(smoke_book, "smoke", chapter), smoke)
    args = [str(smoke.relative_to(root)) if w == str(notebook) else w for w in words[1:]]
    proc = subprocess.run([sys.executable, "-m", "papermill", *args], cwd=root,
                          capture_output=True, text=True, timeout=900, env=book_env(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / out).is_file()
    [results] = (root / "results" / "custom").glob(f"{chapter}-*.json")
    doc = json.loads(results.read_text())
    changed = dict(zip(words[4::3], (json.loads(v) for v in words[5::3])))  # -p NAME VALUE
    assert words[3::3] == ["-p"] * len(changed) and changed
    assert doc["run"]["changed"] == changed and doc["profile"] == "smoke"
    assert results.name == f"{chapter}-{parameters_hash(doc['run']['parameters'])}.json"
    # as it finishes: its kernel's last word, under which only papermill's bar is redrawn
    lines = [s for s in proc.stderr.replace("\r", "\n").splitlines() if s.strip()]
    said = f"[dsmlib] This hand run's results are in {results.resolve()}"
    assert said in lines, proc.stderr[-2000:]
    after = lines[len(lines) - lines[::-1].index(said):]
    assert all(s.startswith("Executing: 100%") for s in after), after
    assert not (root / "results" / "smoke").exists()       # never over a profile's results
