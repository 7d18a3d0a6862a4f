"""Secure Boot as the system probe reads it (envdoctor/probes/system.py ``_secure_boot``)."""

from envdoctor.probes import system
from tests.machines import cpu_box, write_tree


def _probe(tmp_path, root):
    return system.probe(cpu_box(tmp_path).__class__(root=root, env={"PATH": "/bin"}))


def test_empty_sys_firmware_in_a_container_is_unknown_not_secure_boot_off(tmp_path):
    """Docker masks /sys/firmware with an empty tmpfs: the H200 container's report said
    "Secure Boot off (no /sys/firmware/efi: not booted through UEFI)"."""
    root = write_tree(tmp_path / "r", {"/.dockerenv": ""})
    (root / "sys/firmware").mkdir(parents=True)
    s = _probe(tmp_path, root)
    assert (s.secure_boot, s.secure_boot_source) == (None, None)


def test_a_machine_booted_without_uefi_is_secure_boot_off(tmp_path):
    root = write_tree(tmp_path / "r", {"/sys/firmware/acpi/tables/DSDT": "x"})
    s = _probe(tmp_path, root)
    assert (s.secure_boot, s.secure_boot_source) == (False, "no /sys/firmware/efi: not booted through UEFI")
