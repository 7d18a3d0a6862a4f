"""Sizes, nccl-tests' bandwidth factors and what S means per collective (hand-computed figures)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.links.plan import algbw_gbps, busbw_factor, busbw_gbps, parse_size, parse_sizes
from envdoctor.links.target import common as child  # the timing and checks comms.py uses
from envdoctor.units import SizeError, format_bytes


def test_sizes_as_nccl_tests_reads_them():
    assert parse_size("1M") == 1 << 20 and parse_size("4G") == 4 << 30 and parse_size("64K") == 65536
    assert parse_size("256MiB") == 256 << 20 and parse_size("1.5G") == 3 << 29
    assert parse_sizes("1M..4G") == (1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30)
    assert parse_sizes("1G..4G", factor=2) == (1 << 30, 2 << 30, 4 << 30)
    assert parse_sizes("16M,1M,16M") == (1 << 20, 16 << 20)


@pytest.mark.parametrize("text", ["", "1X", "-1M", "1M..1K", "0", "65G", "1M,,junk"])
def test_bad_sizes(text):
    with pytest.raises(SizeError):
        parse_sizes(text)


def test_bus_bandwidth_factors():
    assert busbw_factor("all_reduce", 8) == 1.75 and busbw_factor("all_reduce", 2) == 1.0
    assert busbw_factor("all_gather", 8) == 0.875 and busbw_factor("reduce_scatter", 4) == 0.75
    assert busbw_factor("all_to_all", 2) == 0.5
    assert busbw_factor("all_reduce", 1) == 0.0  # one rank: nothing crosses a link


def test_bandwidths_by_hand():
    # 4 GiB all-reduce in 20 ms on 8 ranks: algbw 4294967296 / 0.02 / 1e9 = 214.7484; x 1.75 = 375.8096
    assert algbw_gbps(4 << 30, 0.02) == 214.748 and busbw_gbps("all_reduce", 4 << 30, 0.02, 8) == 375.81
    assert busbw_gbps("all_gather", 1 << 30, 0.005, 8) == 187.905  # 214.748 x 7/8
    assert algbw_gbps(1 << 20, 0.0) is None
    assert format_bytes(1 << 20) == "1 MiB" and format_bytes(3 << 29) == "1.5 GiB" and format_bytes(100) == "100 B"


def test_what_s_is_per_collective():
    """S as nccl-tests counts it: all_gather the output, reduce_scatter the input (src/*.cu *GetBw)."""
    assert child.shape("all_reduce", 1 << 20, 8) == (262144, 262144, 1 << 20)
    assert child.shape("all_gather", 1 << 20, 8) == (32768, 262144, 1 << 20)  # in: S/n per rank
    assert child.shape("reduce_scatter", 1 << 20, 8) == (262144, 32768, 1 << 20)  # out: S/n per rank
    assert child.shape("all_to_all", 1 << 20, 8) == (262144, 262144, 1 << 20)
    assert child.shape("all_gather", 100, 3) == (8, 24, 96)  # rounded to whole chunks


def test_expected_values_of_the_check():
    assert child.expected("all_reduce", 0, 3) == [6.0]  # ranks hold 1, 2, 3
    assert child.expected("all_gather", 5, 3) == [1.0, 2.0, 3.0]
    assert child.expected("reduce_scatter", 1, 2) == [2.0 + 3.0]  # (r + 1) % 5 + 1 for r = 0, 1
    assert child.expected("all_to_all", 1, 2) == [2.0, 4.0]  # chunk 1 of rank 0, chunk 1 of rank 1


@settings(max_examples=30, deadline=None)
@given(size=st.integers(min_value=4, max_value=1 << 34), n=st.integers(min_value=1, max_value=1024))
def test_s_never_exceeds_the_request_and_splits_evenly(size, n):
    for collective in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        inp, out, s = child.shape(collective, size, n)
        assert s <= max(size, 4 * n) and s % 4 == 0
        if collective != "all_reduce":
            assert max(inp, out) % n == 0 and s == 4 * max(inp, out)
