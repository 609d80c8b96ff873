"""``index.html`` beside the reports: every report in the folder with its title, run count,
verdicts and time, newest first; rewritten whenever a report is written there."""
from __future__ import annotations

import html
import re
import time
from pathlib import Path

from evalsuite import files

INDEX = "index.html"


def shown_verdicts(text: str) -> dict[str, str]:
    """Experiment name -> the outcome a report's verdict table shows (read from its HTML, for
    reports made before verdicts were embedded as data)."""
    rows = re.findall(r"<tr><td><b>([^<]+)</b>.*?<td class=['\"]verdict-(?!figure)[a-z-]+['\"]>([^<]+)</td>", text, flags=re.S)
    return {name: status for name, status in rows}


def entry(path: Path) -> dict:
    """What the index shows of one report, read from its HTML (title, run count, verdict outcomes)."""
    text = path.read_text(errors="replace")
    title = re.search(r"<title>(.*?)</title>", text, re.S)
    runs = re.search(r"<p class=\"muted\">(\d[\d,]*) runs?\.", text)
    return {"name": path.name, "title": html.unescape(title.group(1).strip()) if title else path.stem,
            "runs": runs.group(1) if runs else "?", "verdicts": shown_verdicts(text), "mtime": path.stat().st_mtime,
            "size": path.stat().st_size}


def write_index(folder: str | Path) -> Path:
    folder = Path(folder)
    rows = sorted((entry(p) for p in folder.glob("*.html") if p.name != INDEX), key=lambda e: -e["mtime"])
    titles: dict[str, int] = {}
    for e in rows:
        titles[e["title"]] = titles.get(e["title"], 0) + 1
    body = []
    for e in rows:
        outcomes: dict[str, int] = {}
        for status in e["verdicts"].values():
            outcomes[status] = outcomes.get(status, 0) + 1
        verdicts = ", ".join(f"{n} {s}" for s, n in sorted(outcomes.items())) or "-"
        shown = e["title"] + (f" ({e['name']})" if titles[e["title"]] > 1 else "")  # two reports, one title: the file tells
        body.append(f"<tr><td><a href=\"{html.escape(e['name'])}\">{html.escape(shown)}</a></td>"
                    f"<td class=num>{e['runs']}</td><td>{html.escape(verdicts)}</td>"
                    f"<td>{time.strftime('%Y-%m-%d %H:%M', time.localtime(e['mtime']))}</td>"
                    f"<td class=num>{e['size'] / 2**20:.1f} MiB</td></tr>")
    page = ("<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content=\"width=device-width, "
            "initial-scale=1\"><title>evalsuite reports</title><style>body{font-family:system-ui,sans-serif;margin:2em;"
            "max-width:1100px} table{border-collapse:collapse;font-size:14px} td,th{padding:4px 10px;border-bottom:"
            "1px solid #eee;text-align:left} td.num{text-align:right} .scroll{overflow-x:auto}</style></head><body>"
            f"<h1>evalsuite reports</h1><p>{len(rows)} report{'s' * (len(rows) != 1)} in this folder, newest first.</p>"
            "<div class=scroll><table><thead><tr><th>report</th><th>runs</th><th>verdicts</th><th>written</th>"
            "<th>size</th></tr></thead><tbody>" + "".join(body) + "</tbody></table></div></body></html>")
    return files.write_text(folder / INDEX, page)
