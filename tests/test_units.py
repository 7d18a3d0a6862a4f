"""One size parser and one byte formatter (envdoctor/units.py), the same in every command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.links.plan import parse_sizes
from envdoctor.units import SizeError, format_bytes, parse_size


@pytest.mark.parametrize(
    "text, size",
    [
        ("1GB", 10**9),
        ("1GiB", 2**30),
        ("1G", 2**30),
        ("1 gb", 10**9),
        ("80GB", 80 * 10**9),
        ("1.5MiB", 3 << 19),
        ("64K", 65536),
        ("64KB", 64000),
        ("4096B", 4096),
        ("2TiB", 2 << 40),
        (" 16 M ", 16 << 20),
    ],
)
def test_sizes_by_one_rule(text, size):
    assert parse_size(text) == size


def test_comms_and_fit_read_1gb_alike():
    # comms read "1GB" as 2^30, fit as 10^9
    assert parse_sizes("1GB") == (10**9,) and parse_sizes("1GiB") == (2**30,)


@pytest.mark.parametrize("text", ["64", "0", "", "1X", "-1M", "1e9B", "nanGB", "infGiB", "٣GiB", "²G", "1,5GB", "1.GB"])
def test_what_is_not_a_size_is_refused(text):
    # a bare "64" was 64 GiB in fit and 64 bytes in comms; fit took "٣GiB" as 3 GiB
    with pytest.raises(SizeError):
        parse_size(text)


def test_a_bare_number_says_which_units_to_choose():
    with pytest.raises(SizeError, match=r"'64' has no unit: say 64B \(bytes\), 64KiB, 64GB \(64 x 10\^9\)"):
        parse_size("64")


def test_the_callers_range():
    assert parse_size("4B", low=4) == 4
    with pytest.raises(SizeError, match="'2B' is outside 4 B to 64 GiB"):
        parse_size("2B", low=4, high=64 << 30)


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (100, "100 B"),
        (1 << 10, "1 KiB"),
        (3 << 29, "1.5 GiB"),
        (96 << 20, "96 MiB"),
        (5 << 40, "5 TiB"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (-(2 << 30), "-2 GiB"),
    ],
)
def test_bytes_written_one_way(n, text):
    assert format_bytes(n) == text


def test_a_fixed_unit_keeps_its_decimals_for_columns():
    assert format_bytes(16 << 30, places=2, unit="GiB") == "16.00 GiB"
    assert format_bytes(81559 << 20, places=0, unit="GiB") == "80 GiB"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit", "gpt2", "--memory", "80"], "--memory: '80' has no unit"),
        (["comms", "--sizes", "64"], "'64' has no unit"),
    ],
)
def test_commands_refuse_a_bare_number_with_exit_2(argv, message):
    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == 2 and message in r.output, r.output
