"""Pure answers built on listings: one-line summaries, the best variant, the table fallback.

>>> summary(cu117, target)
'cu117: torch 1.13.0-2.0.1 (4 versions), none for cp312 (wheels for cp37-cp311)'
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Optional, Sequence, Tuple

from packaging.utils import canonicalize_name
from packaging.version import Version

from envdoctor.clicore import EXIT_ERRORS, EXIT_OK, EXIT_USAGE
from envdoctor.parse import version
from envdoctor.redact import mask_text
from envdoctor.wheels.client import IndexClient
from envdoctor.wheels.listing import VariantListing
from envdoctor.wheels.target import Target

#: Exit codes of ``envdoctor index``, the one policy's (``clicore``): a variant that could not be
#: read (the network failed, a page that is no index, ``--offline`` with nothing cached) is a run
#: that could not complete for a named reason (2), not envdoctor's bug (3, ED900).
EXIT_FOUND, EXIT_NOT_FOUND, EXIT_CANNOT_TELL = EXIT_OK, EXIT_ERRORS, EXIT_USAGE


class IndexUnavailable(RuntimeError):
    """The index could not be read, so "nothing newer" cannot be claimed (``listing.error``)."""

    def __init__(self, listing: VariantListing) -> None:
        super().__init__(listing.error or f"{listing.url}: no answer")
        self.listing = listing


def span(items: Sequence[str], limit: int = 3) -> str:
    """ "1.13.0-2.0.1" for many items, "2.0.0, 2.0.1" for a few, "" for none."""
    if not items:
        return ""
    if len(items) <= limit - 1:
        return ", ".join(items)
    return f"{items[0]}-{items[-1]}"


def summary(listing: VariantListing, target: Target) -> str:
    """One line for a person: what the variant holds for the target, or why it is unknown."""
    head = f"{listing.variant}:"
    pkg = listing.package
    if listing.exists is None:
        return mask_text(f"{head} {listing.error or 'could not tell'}")
    if listing.exists is False:
        return mask_text(f"{head} {listing.error or f'{listing.url}: no such index'}")
    if not listing.versions:
        if listing.source == "table":
            return f"{head} the bundled table knows no {pkg} release for this variant"
        return f"{head} index exists, but has no {pkg} files"
    count = len(listing.versions)
    have = f"{pkg} {span(listing.versions)}" + (f" ({count} versions)" if count > 2 else "")
    py = target.short
    if listing.compatible:
        line = f"{head} {have}; for {py}: {span(listing.compatible)} (newest {listing.newest})"
    else:
        line = f"{head} {have}, none for {py}"
        reasons = []
        if listing.other_pythons:
            reasons.append(f"wheels for {span(listing.other_pythons)}")
        if listing.other_platforms:
            reasons.append(
                f"or {span(sorted(listing.other_platforms), 4)}"
                if reasons
                else f"wheels for {span(sorted(listing.other_platforms), 4)}"
            )
        if reasons:
            line += " (" + " ".join(reasons) + ")"
    return line


def provenance(listing: VariantListing) -> Optional[str]:
    """ "cached 12 min ago", "from the bundled table (offline)", or None for a fresh fetch."""
    if listing.source == "table":
        return "from the bundled table (offline, not in the cache)"
    parts = []
    if listing.from_cache and listing.age is not None:
        parts.append(f"cached {_ago(listing.age)}")
    if listing.note and listing.note not in ("offline",):
        parts.append(listing.note)
    return mask_text("; ".join(parts)) if parts else None


def best(listings: Iterable[VariantListing]) -> Optional[VariantListing]:
    """The listing with the newest wheel for the target (first listed wins a tie)."""
    winner: Optional[VariantListing] = None
    for listing in listings:
        if listing.found and (winner is None or _v(listing.newest) > _v(winner.newest)):
            winner = listing
    return winner


def exit_code(listings: Sequence[VariantListing], any_is_enough: bool = False) -> int:
    """0 found, 1 not found / no wheel for this Python, 2 could not tell (network, bad page, offline).

    Named variants must all be found; with ``--all`` (``any_is_enough``) one found is enough.
    """
    if any_is_enough:
        if any(item.found for item in listings):
            return EXIT_FOUND
        return EXIT_CANNOT_TELL if any(item.exists is None for item in listings) else EXIT_NOT_FOUND
    if any(item.exists is None for item in listings):
        return EXIT_CANNOT_TELL
    return EXIT_FOUND if listings and all(item.found for item in listings) else EXIT_NOT_FOUND


def listing_from_table(table: Any, listing: VariantListing, target: Target) -> VariantListing:
    """Offline and not in the cache: what the bundled table says torch has on this variant.

    Only torch is in the table. A release counts for the target when the table lists the
    target's Python ("3.12", "3.14t") and, where it lists platforms, one the target installs.
    """
    if canonicalize_name(listing.package) != "torch":
        return listing
    builds = [
        (r, v)
        for r in getattr(table, "torch_releases", ())
        for v in r.variants
        if getattr(v, "name", None) == listing.variant
    ]
    known = {getattr(v, "name", None) for v in getattr(table, "variants", ())}
    if not builds and listing.variant not in known:
        return dataclasses.replace(
            listing,
            error=(
                f"offline: not in the cache, and envdoctor's table knows no variant {listing.variant} "
                "(run without --offline to ask the index)"
            ),
        )
    major_minor = ".".join(target.python.split(".")[:2])
    py = major_minor + ("t" if target.short.endswith("t") else "")
    versions = sorted({p for r, _ in builds for p in _patches(r)}, key=_v)
    # Only what the table confirms is offered offline (the advisor does the same); the rest is
    # listed but not counted as a wheel for this Python.
    compatible = sorted(
        {
            p
            for r, v in builds
            if _confirmed(r)
            and _confirmed(v)
            and py in {str(x) for x in getattr(r, "pythons", ())}
            and _platform_ok(getattr(v, "platforms", ()), target)
            for p in _patches(r)
        },
        key=_v,
    )
    doubtful = sorted({p for r, v in builds if not (_confirmed(r) and _confirmed(v)) for p in _patches(r)}, key=_v)
    note = "from the bundled table"
    if doubtful:
        note += f"; unconfirmed there, not offered: {span(doubtful)}"
    return VariantListing(
        listing.variant,
        listing.url,
        exists=True,
        versions=tuple(versions),
        compatible=tuple(compatible),
        offline=True,
        package=listing.package,
        source="table",
        note=note,
    )


def _patches(release: Any) -> Tuple[str, ...]:
    """Every patch release of a table row: 2.7.0 and 2.7.1 for the 2.7 row."""
    patches = tuple(str(p.version) for p in getattr(release, "patches", ()) or ())
    return patches or (str(release.version),)


def _confirmed(row: Any) -> bool:
    check = getattr(row, "confirmed", None)
    return bool(check()) if callable(check) else not getattr(row, "unconfirmed", False)


def _platform_ok(platforms: Iterable[str], target: Target) -> bool:
    """Table platforms are plain tags ("linux_x86_64", "win_amd64", "macosx_arm64")."""
    platforms = [str(p) for p in platforms]
    if not platforms:
        return True
    for p in platforms:
        if p in target.platforms:
            return True
        if p.startswith("macosx") and any(
            t.startswith("macosx") and t.endswith(p.rsplit("_", 1)[-1]) for t in target.platforms
        ):
            return True
    return False


def upstream_newer(table: Any, client: IndexClient, variant: str = "cpu") -> Tuple[str, ...]:
    """torch versions on ``variant`` newer than the newest release the table bundles.

    Pre-releases are ignored. Raises :class:`IndexUnavailable` when the index cannot be read.
    >>> upstream_newer(load_table(), IndexClient(), "cpu")
    ('2.12.0',)
    """
    listing = client.variant(variant, "torch", Target.current())
    if listing.exists is None:
        raise IndexUnavailable(listing)
    bundled = [_v(str(r.version)) for r in getattr(table, "torch_releases", ())]
    newest = max(bundled) if bundled else Version("0")
    newer = [v for v in listing.versions if not _v(v).is_prerelease and _v(v) > newest]
    return tuple(newer)


def _v(text: Optional[str]) -> Version:
    """Version 0 for what is not a version, so that listings sort without raising."""
    return version(text) or Version("0")


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} days ago"
