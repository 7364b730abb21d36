"""Reference executions (book layer): chapters executed once under a profile, where the
hardware is, committed in ``reference/<profile>/`` with their provenance, and shown beside
every build.

- :mod:`~dsmlib.book.references.stored`: the committed files (a notebook and its results),
  storing them and reading them back, each checked against its notebook;
- :mod:`~dsmlib.book.references.freshness`: fresh (executed with the current code's content
  key) or stale, and what changed since;
- :mod:`~dsmlib.book.references.run`: ``python -m dsmlib reference``, which makes them;
- :mod:`~dsmlib.book.references.section`: a reference's figures and verdicts on its chapter's
  page;
- :mod:`~dsmlib.book.references.scales`: every claim's verdict at every scale, for the ledger,
  the errata and the introduction.
"""
