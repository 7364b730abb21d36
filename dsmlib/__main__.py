"""``python -m dsmlib``: the book's command line (see :mod:`dsmlib.book.commands.cli`)."""
import sys

from .book.commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
