"""``python -m dsmlib``: the book's command line (see :mod:`dsmlib.book.cli`)."""
import sys

from .book.cli import main

if __name__ == "__main__":
    sys.exit(main())
