"""How `make test` splits the suite over pytest-xdist workers (tests/conftest.py): a file is one
work unit. The session's smoke book is built once, by the first worker that asks for it, and
read by the files that use it, on any worker: the book's builder is handed out first, its
readers after half of the other files, longest first, and the other half last. Section 5's notebook
executes once per session, in that book: the notebook test and the GPU script's dry run take
its execution from there."""
from __future__ import annotations

import re

from helpers import BOOK_BUILDER, READER_SECONDS, ROOT, files_using, work_order


def test_the_smoke_book_is_built_first_and_read_after_half_the_rest():
    readers = files_using(ROOT, "smoke_book")
    assert {"tests/book/test_book.py", "tests/book/test_browser.py",
            "tests/book/test_references.py", "tests/book/test_site_favicon.py",
            "tests/book/test_sec5_notebook.py", "tests/book/test_gpu_check.py"} <= readers
    assert BOOK_BUILDER in readers
    assert "tests/book/test_profiles.py" not in readers
    assert "tests/conftest.py" not in readers              # defines it; holds no test
    others = ["tests/theory/test_a.py", "tests/models/test_b.py", "tests/test_c.py"]
    units = ["tests/book/test_references.py", others[0], BOOK_BUILDER, others[1],
             "tests/book/test_browser.py", others[2]]
    assert work_order(units, readers) == [
        BOOK_BUILDER, others[0], others[1], "tests/book/test_browser.py",
        "tests/book/test_references.py", others[2]]
    assert set(READER_SECONDS) <= readers                  # the table names readers only
    assert sorted(work_order(units, readers)) == sorted(units)          # nothing lost
    assert work_order(others, readers) == others                        # no book: as given
    assert work_order([others[0], "tests/book/test_references.py"], readers) == \
        [others[0], "tests/book/test_references.py"]


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
