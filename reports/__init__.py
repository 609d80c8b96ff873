"""Self-contained HTML reports of stored runs: ``builder`` renders, ``sections/`` holds one class per
section with its template partial, ``plots`` draws. Reports read records; they never train."""
from __future__ import annotations

if __name__ != "evalsuite.reports":  # the checkout's reports/ folder imported by its bare name (from the repository root)
    raise ImportError(f"import evalsuite.reports, not {__name__}: reports/ installs as evalsuite.reports, and a second "
                      "copy under another name would keep a registry of its own")
