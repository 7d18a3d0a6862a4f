"""The wheel-index client: does ``<base>/cu128/`` exist, and what does it hold for this Python?

>>> from envdoctor.wheels import IndexClient, Target
>>> client = IndexClient()          # base: ENVDOCTOR_INDEX_URL, else the table's index_base
>>> client.variant("cu117", "torch", Target.for_python("3.12", "manylinux_2_28_x86_64")).compatible
()

Modules: ``target`` (interpreter tags via packaging.tags), ``pages`` (pure PEP 503/691 parsing),
``listing`` (pure: what a page holds for a target), ``cache`` (disk cache), ``errors`` (a failed
request in one line), ``client`` (HTTP, retries, concurrency), ``report`` (pure summaries).
"""

from envdoctor.wheels.cache import default_cache_dir
from envdoctor.wheels.client import FALLBACK_BASE, IndexClient, check_variant_name, default_base, default_choice
from envdoctor.wheels.listing import VariantListing, analyze
from envdoctor.wheels.pages import PageError, parse_html, parse_json, parse_page
from envdoctor.wheels.report import (
    EXIT_CANNOT_TELL,
    EXIT_FOUND,
    EXIT_NOT_FOUND,
    IndexUnavailable,
    best,
    exit_code,
    listing_from_table,
    summary,
    upstream_newer,
)
from envdoctor.wheels.target import Target, TargetError, expand_platform

__all__ = [
    "EXIT_CANNOT_TELL",
    "EXIT_FOUND",
    "EXIT_NOT_FOUND",
    "FALLBACK_BASE",
    "IndexClient",
    "IndexUnavailable",
    "PageError",
    "Target",
    "TargetError",
    "VariantListing",
    "analyze",
    "best",
    "check_variant_name",
    "default_base",
    "default_choice",
    "default_cache_dir",
    "exit_code",
    "expand_platform",
    "listing_from_table",
    "parse_html",
    "parse_json",
    "parse_page",
    "summary",
    "upstream_newer",
]
