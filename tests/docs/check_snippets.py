#!/usr/bin/env python3
"""Every ```cpp block in README.md and docs/*.md must appear verbatim in a source file
under examples/ (which the build compiles and the tests run), so no snippet in the docs
can drift from code that compiles. Usage: check_snippets.py REPO_ROOT"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
sources = [p.read_text() for p in (root / "examples").rglob("*") if p.suffix in (".cpp", ".hpp")]
pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
failures, checked = 0, 0
for page in pages:
    if not page.exists():
        continue
    for block in re.findall(r"```cpp\n(.*?)```", page.read_text(), flags=re.S):
        checked += 1
        if not any(block in src for src in sources):
            failures += 1
            print(f"FAIL {page.relative_to(root)}: snippet not found in examples/:\n{block}")
print(f"{checked - failures} passed, {failures} failed")
sys.exit(1 if failures or checked == 0 else 0)
