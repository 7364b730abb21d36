"""How `make test` splits the suite over pytest-xdist workers (tests/conftest.py): a file is one
work unit, and every file that uses the session's smoke book shares one unit, so that book is
built once and the tests that re-execute it run in one process, as without xdist. Section 5's
notebook executes once per session, in that book: the notebook test and the GPU script's dry
run take its execution from there."""
from __future__ import annotations

import re

from helpers import ROOT, files_using, xdist_scope


def test_the_smoke_book_files_are_one_work_unit_and_the_rest_one_per_file():
    together = files_using(ROOT, "smoke_book")
    assert {"tests/book/test_book.py", "tests/book/test_browser.py",
            "tests/book/test_references.py", "tests/book/test_site_favicon.py",
            "tests/book/test_sec5_notebook.py", "tests/book/test_gpu_check.py"} <= together
    assert "tests/book/test_profiles.py" not in together
    assert "tests/conftest.py" not in together             # defines it; holds no test
    book = {xdist_scope(f"{f}::test_x[a/b.html]", together) for f in together}
    assert book == {"smoke_book"}
    assert xdist_scope("tests/book/test_profiles.py::test_a", together) == \
        xdist_scope("tests/book/test_profiles.py::Cls::test_b[x::y]", together) == \
        "tests/book/test_profiles.py"


def test_a_name_inside_another_word_does_not_count(tmp_path):
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "sub" / "test_a.py").write_text("def test_a(smoke_book): ...\n")
    (tmp_path / "tests" / "test_b.py").write_text("def test_b(my_smoke_book_copy): ...\n")
    (tmp_path / "tests" / "helper_c.py").write_text("smoke_book\n")
    assert files_using(tmp_path, "smoke_book") == {"tests/sub/test_a.py"}


SECTION5_RUN = re.compile(r'sys\.executable, "-m", "dsmlib"[^\]]*"sec5_distillation"'
                          r'|"benchmarks/gpu_check\.sh"')


def test_section5_executes_only_in_the_smoke_book():
    """Every test file that starts the runner on Section 5 (or the GPU script, whose dry run
    stores it as a reference) takes the smoke book's execution, so that its notebook executes
    once per session: it cost a smoke execution with its training in each of them."""
    runs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
            if SECTION5_RUN.search(p.read_text())}
    assert {"tests/book/test_sec5_notebook.py", "tests/book/test_gpu_check.py"} <= runs
    assert runs <= files_using(ROOT, "smoke_book")
