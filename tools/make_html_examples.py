"""Write the HTML pages of the H200 runs to docs/examples/h200/*.html (python tools/make_html_examples.py).

Each page comes from a document recorded on the H200 (docs/examples/h200/*.json, tests/fixtures/) or
from a run replayed from its recordings (tests/htmlpages.py says which); the tests check the same pages.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from envdoctor.atomic import write_atomic
    from tests.htmlpages import EXAMPLES, PAGES

    with tempfile.TemporaryDirectory() as tmp:
        for name in EXAMPLES:
            page = PAGES[name](Path(tmp) / name)
            out = ROOT / "docs" / "examples" / "h200" / f"{name}.html"
            write_atomic(out, page.html)
            print(f"wrote {out.relative_to(ROOT)} ({len(page.html.encode()) // 1024} KiB, exit {page.exit_code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
