"""The README quotes no outcome that the generated docs/RESULTS.md does not hold: its results table
lists, finding by finding, the outcome the committed report showed, which docs/RESULTS.md records
beside the outcome this version's rules give (`evalsuite reproduce --verdicts-from`)."""
import re


def table(text: str, header: str) -> list[list[str]]:
    lines = text[text.index(header):].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([c.strip().strip("*") for c in line.strip("|").split("|")])
    return rows


def test_readme_outcomes_are_those_of_the_generated_results(repo_root):
    readme = (repo_root / "README.md").read_text()
    results = (repo_root / "docs" / "RESULTS.md").read_text()
    quoted = [row[1] for row in table(readme, "| finding | verdict | figures |")]
    generated = table(results, "| finding | outcome |")
    shown = {re.sub(r"\[([^\]]+)\].*", r"\1", row[0]): row[2] for row in generated}
    names = [n for n in shown if not n.startswith("frontier-")]
    assert len(quoted) == len(names)
    assert quoted == [shown[n] for n in names]
    assert "docs/RESULTS.md" in readme and "docs/FLOORS.md" in readme
