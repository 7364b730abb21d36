"""How `make test` splits the suite over pytest-xdist workers (tests/conftest.py): a file is one
work unit. The session's smoke book is built once, by the first worker that asks for it, and
read by the files that use it, on any worker: the book's builder is handed out first, then
every other file longest first, a reader only once enough work lies ahead of it for the book
to be built meanwhile. Section 5's notebook
executes once per session, in that book: the notebook test and the GPU script's dry run take
its execution from there."""
from __future__ import annotations

import re

from helpers import (BOOK_BUILDER, BOOK_SECONDS, FILE_SECONDS, ROOT, files_using,
                     work_order)


def test_the_smoke_book_is_built_first_and_the_rest_handed_out_longest_first():
    readers = files_using(ROOT, "smoke_book")
    assert {"tests/book/test_book.py", "tests/book/test_browser.py",
            "tests/book/test_references.py", "tests/book/test_site_favicon.py",
            "tests/book/test_sec5_notebook.py", "tests/book/test_gpu_check.py"} <= readers
    assert BOOK_BUILDER in readers
    assert "tests/book/test_profiles.py" not in readers
    assert "tests/conftest.py" not in readers              # defines it; holds no test
    tests = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")}
    assert set(FILE_SECONDS) <= tests                      # the table names test files only
    browser, refs, grid, reexec = ("tests/book/test_browser.py", "tests/book/test_references.py",
                                   "tests/book/test_grid.py", "tests/book/test_reexecution.py")
    assert FILE_SECONDS[browser] > FILE_SECONDS[reexec] > FILE_SECONDS[grid] > FILE_SECONDS[refs]
    assert FILE_SECONDS[reexec] >= BOOK_SECONDS > FILE_SECONDS[grid] + FILE_SECONDS[refs]
    others = ["tests/theory/test_a.py", "tests/models/test_b.py", "tests/test_c.py"]
    units = [refs, others[0], BOOK_BUILDER, grid, others[1], browser, reexec, others[2]]
    # the builder; the longest non-reader; the readers held back until the work ahead of them
    # reaches BOOK_SECONDS, longest first; then the rest longest first, unknown files as given
    assert work_order(units, readers) == [BOOK_BUILDER, reexec, browser, grid, refs, *others]
    assert sorted(work_order(units, readers)) == sorted(units)          # nothing lost
    # too little work ahead of them: the readers go last, longest first
    assert work_order([refs, others[0], BOOK_BUILDER, grid, browser], readers) == \
        [BOOK_BUILDER, grid, others[0], browser, refs]
    assert work_order(others, readers) == others                        # unknown: as given
    assert work_order([others[0], refs, grid], readers) == [grid, refs, others[0]]   # no book


def test_a_name_inside_another_word_does_not_count(tmp_path):
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "sub" / "test_a.py").write_text("def test_a(smoke_book): ...\n")
    (tmp_path / "tests" / "test_b.py").write_text("def test_b(my_smoke_book_copy): ...\n")
    (tmp_path / "tests" / "helper_c.py").write_text("smoke_book\n")
    assert files_using(tmp_path, "smoke_book") == {"tests/sub/test_a.py"}


SECTION5_RUN = re.compile(r'sys\.executable, "-m", "dsmlib"[^\]]*"sec5_distillation"'
                          r'|"benchmarks/gpu_check\.sh"')
# Executions the smoke book cannot stand in for: another data set, in a book copy of their own.
OTHER_DATA = {"tests/book/test_gpu_cifar10.py": "CIFAR-10 from a small store (issue 51)",
              "tests/book/test_cpu_cifar10.py": "CIFAR-10 from a small store (issue 61)"}


def test_section5_executes_only_in_the_smoke_book():
    """Every test file that starts the runner on Section 5 (or the GPU script, whose dry run
    stores it as a reference) takes the smoke book's execution, so that its notebook executes
    once per session: it cost a smoke execution with its training in each of them. The one
    exception runs the chapter on other data, which the smoke book does not train on."""
    runs = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
            if SECTION5_RUN.search(p.read_text())}
    assert {"tests/book/test_sec5_notebook.py", "tests/book/test_gpu_check.py"} <= runs
    assert set(OTHER_DATA) <= runs                         # the exception is still needed
    assert runs - set(OTHER_DATA) <= files_using(ROOT, "smoke_book")
    for name in OTHER_DATA:                 # ... and runs on other data (CIFAR-10's store)
        text = (ROOT / name).read_text()
        assert "write_npm_tarball" in text or "reference\" / CPU_CIFAR10" in text, name
