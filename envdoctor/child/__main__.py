"""``python -m envdoctor.child SCRIPT`` prints the program envdoctor sends for SCRIPT (prelude,
script, call), so a child can be run or recorded by hand exactly as envdoctor runs it::

    python -m envdoctor.child torch_probe.py | /opt/torch/.venv/bin/python - '{}'
"""

import sys

from envdoctor.child import script_text


def main(argv: list) -> int:
    if len(argv) != 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: python -m envdoctor.child SCRIPT   (e.g. torch_probe.py)\n")
        return 2
    try:
        sys.stdout.write(script_text(argv[1]))
    except (FileNotFoundError, OSError):
        sys.stderr.write(f"no child script {argv[1]!r} in envdoctor/child\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
