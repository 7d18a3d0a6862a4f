"""NCCL's INFO log (envdoctor/parse/nccl_log.py) on lines in the formats of NVIDIA/nccl v2.28.9
(src/init.cc "NCCL version", src/transport/nvls.cc "NVLS multicast support is ...", the channel lines,
src/enqueue.cc's TUNING line "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}") and of
NCCL <= 2.23 ("Algo 1 proto 2 time 123.4"); written by hand, no multi-GPU run was at hand."""

from __future__ import annotations

from envdoctor.parse.nccl_log import parse_nccl_log

LOG_2_28 = """\
h200x8:48211:48211 [0] NCCL INFO Bootstrap: Using eth0:127.0.0.1<0>
h200x8:48211:48211 [0] NCCL INFO NCCL version 2.28.9+cuda13.0
h200x8:48211:48290 [0] NCCL INFO NVLS multicast support is not available on dev 0 (NVLS_NCHANNELS 0)
h200x8:48211:48290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h200x8:48211:48290 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
h200x8:48211:48290 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
h200x8:48211:48211 [0] NCCL INFO AllReduce: 8 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}
h200x8:48211:48211 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..31}
h200x8:48211:48211 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..31}
h200x8:48211:48211 [0] NCCL INFO AllGather: 134217728 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..31}
h200x8:48211:48211 [0] NCCL INFO ReduceScatter: 134217728 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..31}
h200x8:48211:48211 [0] NCCL WARN something unrelated
"""

LOG_NVLS_SHM = """\
n1:1:1 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
n1:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)
n1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
n1:1:1 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo NVLS proto Simple channel{Lo..Hi}={0..15}
"""

LOG_2_18 = """\
old:7:7 [0] NCCL INFO NCCL version 2.18.1+cuda12.1
old:7:7 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 0 proto 1 time 40.112
old:7:7 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 37.001
old:7:7 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 36.950
"""


def test_nccl_2_28_ring_over_p2p():
    log = parse_nccl_log(LOG_2_28)
    assert log.version == "2.28.9" and log.nvls_available is False and not log.nvls_used
    assert log.transports == ("P2P/CUMEM",)
    assert log.choice("all_reduce", [1 << 30]) == ("Ring", "Simple")
    assert log.tuning[("all_reduce", 1 << 30)] == {("Ring", "Simple"): 2}
    assert log.choice("all_gather", [128 << 20]) == ("Ring", "Simple") and log.choice("all_to_all", [1]) is None


def test_nvls_and_shared_memory():
    log = parse_nccl_log(LOG_NVLS_SHM)
    assert log.nvls_available is True and log.nvls_used and log.transports == ("SHM/direct",)


def test_old_numeric_algorithms_and_the_most_common_choice():
    log = parse_nccl_log(LOG_2_18)
    assert log.choice("all_reduce", [1 << 20]) == ("Ring", "Simple")
    assert log.tuning[("all_reduce", 1 << 20)][("Tree", "LL128")] == 1


def test_nothing_to_read():
    log = parse_nccl_log("garbage\n\x00\nNCCL INFO \n")
    assert log.version is None and log.tuning == {} and log.nvls_available is None
