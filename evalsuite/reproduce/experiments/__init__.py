"""One module per finding of docs/FINDINGS.md; each calls ``reproduce.register`` with its
``Experiment`` (claim, source, sweep per scale, cells, verdict). Every module here is discovered
on first use: adding an experiment is adding a file."""
