"""Each chapter's ``Parameters`` (chapters layer), one module per notebook, same name: what the
book resolves and checks before any kernel starts (:func:`dsmlib.book.profiles.resolve`). Their
defaults are the ``quick`` profile; ``notebooks/profiles.yml`` overrides them per profile. Each
chapter module re-exports its own.

They are declared apart from the chapters so that a command resolves every chapter without
importing what the chapters compute with: torch alone takes 1.5-2 s to import, and the command
line resolves all six at every start.
"""
