"""Each chapter's ``Parameters`` (chapters layer), one module per notebook, same name: what the
book resolves and checks before any kernel starts (:func:`dsmlib.book.profiles.resolve`). Their
defaults are the ``quick`` profile; ``notebooks/profiles.yml`` overrides them per profile. Each
one-module chapter re-exports its own; Section 5's wing does not (these parameters build its
grid, so they stand above it), and its page imports them from here.

They are declared apart from the chapters so that a command resolves every chapter without
importing what the chapters compute with: torch alone takes 1.5-2 s to import, and the command
line resolves all six at every start.
"""
