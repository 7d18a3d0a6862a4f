"""Where the data files of the table come from, and reading them as bytes.

The bundled ``data/`` is read from an installed wheel (``envdoctor/data/*.toml``), from a
checkout (``<checkout>/data``) and, through :mod:`importlib.resources`, from inside a zip archive
(a zipapp build): everything is read as bytes through the small :class:`DataDir` interface that
both a :class:`~pathlib.Path` and a zip Traversable have. ``ENVDOCTOR_DATA`` points the default
table at another folder::

    ENVDOCTOR_DATA=/path/to/a/copy/of/data envdoctor check

(the test suite sets it to ``tests/tables/frozen-2026-12-01`` so that adding rows to ``data/``
never changes what the tests see).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Optional, Protocol

from envdoctor.table.schema import Doc, TableError, parse_toml

#: Names the default table at another folder of ``*.toml`` files (a copy of ``data/``).
DATA_ENV = "ENVDOCTOR_DATA"

FILES = ("cuda.toml", "architectures.toml", "gpus.toml", "torch.toml", "indexes.toml", "ngc.toml", "distros.toml")


class DataDir(Protocol):
    """A folder of data files: a :class:`pathlib.Path`, or a :mod:`importlib.resources`
    Traversable (a folder inside a zip archive)."""

    @property
    def name(self) -> str: ...

    def joinpath(self, *child: str) -> DataDir: ...

    def is_file(self) -> bool: ...

    def iterdir(self) -> Iterator[DataDir]: ...

    def read_bytes(self) -> bytes: ...


def data_directory(environ: Optional[Mapping[str, str]] = None) -> DataDir:
    """The folder the default table is read from: ``$ENVDOCTOR_DATA`` when set, else
    ``envdoctor/data`` (an installed wheel: pyproject force-includes ``data/`` there), else
    ``<checkout>/data``; inside a zip archive (a zipapp) ``envdoctor/data`` as a package resource."""
    env = os.environ if environ is None else environ
    override = env.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    here = Path(__file__)
    if here.is_file():  # a real folder: plain paths (importlib.resources costs ~30 ms to import)
        package = here.resolve().parent.parent
        candidates: tuple[DataDir, ...] = (package / "data", package.parent / "data")
    else:  # inside an archive: only the import system can read it
        from importlib import resources

        candidates = (resources.files("envdoctor").joinpath("data"),)
    for candidate in candidates:
        if candidate.joinpath("cuda.toml").is_file():
            return candidate
    raise TableError(f"no data directory with cuda.toml in {' or '.join(str(c) for c in candidates)}")


def read_files(directory: DataDir) -> dict[str, Optional[bytes]]:
    """The bytes of every data file of ``directory``; None for a file that is missing. A file
    that exists but cannot be read is a :class:`TableError` naming it."""
    out: dict[str, Optional[bytes]] = {}
    for name in FILES:
        try:
            out[name] = directory.joinpath(name).read_bytes()
        except (FileNotFoundError, NotADirectoryError, KeyError):
            out[name] = None  # zipfile.Path raises KeyError for a name the archive lacks
        except OSError as exc:
            raise TableError(f"{directory.name}/{name}: cannot be read: {exc.strerror or exc}") from None
    return out


def read_doc(name: str, directory: Optional[DataDir] = None) -> Doc:
    """One more data file (beside the table's own): ``read_doc("xid.toml")`` reads it from the
    default data folder (``$ENVDOCTOR_DATA``, the package, or a zip archive), parsed, as a
    :class:`~envdoctor.table.schema.Doc`; TableError when missing or broken."""
    folder = directory if directory is not None else data_directory()
    label = f"{folder.name}/{name}"
    try:
        raw: Optional[bytes] = folder.joinpath(name).read_bytes()
    except (FileNotFoundError, NotADirectoryError, KeyError):
        raw = None
    except OSError as exc:
        raise TableError(f"{label}: cannot be read: {exc.strerror or exc}") from None
    return Doc(label, parse_toml(label, raw))
