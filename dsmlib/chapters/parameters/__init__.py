"""Each chapter's ``Parameters``, one module per notebook, same name (chapters layer): what
the book resolves and checks before any kernel starts (:func:`dsmlib.book.profiles.resolve`),
importing none of what the chapters compute with. Each chapter module re-exports its own."""
