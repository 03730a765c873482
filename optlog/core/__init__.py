"""Pure domain logic: no I/O, no database, no Textual, no git, no HTTP."""
