"""What a target interpreter installs: its version, ABI and libc (run by envdoctor.child, ``-I``).

Standard library only; envdoctor turns the answer into ``packaging.tags`` on its side
(``envdoctor.wheels.target.target_from_probe``). On the H200::

    {"version": [3, 12, 3], "implementation": "cpython", "abiflags": "", "gil_disabled": false,
     "soabi": "cpython-312-x86_64-linux-gnu", "libc": ["glibc", "2.39"], "confstr": "glibc 2.39",
     "machine": "x86_64", "bits": 64, "platform": "linux-x86_64", "mac_ver": ""}
"""

import os
import platform
import struct
import sys
import sysconfig


def main(config):
    libc = platform.libc_ver()
    try:
        confstr = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, OSError, ValueError):
        confstr = None
    return {
        "version": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "cache_tag": sys.implementation.cache_tag,
        "abiflags": getattr(sys, "abiflags", None),
        "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "soabi": sysconfig.get_config_var("SOABI"),
        "libc": [libc[0], libc[1]],
        "confstr": confstr,
        "machine": platform.machine(),
        "bits": struct.calcsize("P") * 8,
        "platform": sysconfig.get_platform(),
        "mac_ver": platform.mac_ver()[0],
    }
