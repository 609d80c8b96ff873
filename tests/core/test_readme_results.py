"""The README's results are the generated ones: its outcome table is docs/RESULTS.md's, row for
row (links pointed at docs/RESULTS.md), and every figure it shows is a file `reproduce --figures`
wrote into docs/figures (no result typed or drawn by hand)."""
import re


def table(text: str, header: str) -> list[str]:
    lines = text[text.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


HEADER = "| finding | outcome | clauses shown / contradicted / undecided |"


def test_readme_outcome_table_is_the_generated_one(repo_root):
    readme = (repo_root / "README.md").read_text()
    results = (repo_root / "docs" / "RESULTS.md").read_text()
    generated = [row.replace("](#", "](docs/RESULTS.md#") for row in table(results, HEADER)]
    assert generated and table(readme, HEADER) == generated
    assert "docs/RESULTS.md" in readme and "docs/FLOORS.md" in readme


def test_readme_figures_are_generated_files(repo_root):
    readme = (repo_root / "README.md").read_text()
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert "docs/figures/capacity-law-collapse.png" in shown
    for path in shown:  # written by `reproduce --figures`: docs/figures, or a committed run's own (docs/NAME/figures)
        assert re.fullmatch(r"docs/(?:[a-z0-9-]+/)?figures/[a-z0-9-]+\.png", path), path
        assert (repo_root / path).read_bytes().startswith(b"\x89PNG"), path
