#!/usr/bin/env python3
"""Rewrite the README's flags reference (between <!-- flags:begin --> and <!-- flags:end -->)
from scripts/flags_reference.sh's output. Usage: python3 scripts/update_flags_reference.py
[path/to/inca]"""
import pathlib, subprocess, sys
root = pathlib.Path(__file__).resolve().parent.parent
inca = sys.argv[1] if len(sys.argv) > 1 else str(root / "build" / "inca")
ref = subprocess.run(["bash", str(root / "scripts" / "flags_reference.sh"), inca], capture_output=True, text=True,
                     check=True).stdout
readme = root / "README.md"
text = readme.read_text()
b, e = "<!-- flags:begin -->\n", "<!-- flags:end -->"
i, j = text.index(b) + len(b), text.index(e)
readme.write_text(text[:i] + ref + text[j:])
