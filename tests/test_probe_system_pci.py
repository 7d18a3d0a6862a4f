"""The system and PCI probes on recorded file trees."""

from envdoctor.probes import pci, system
from envdoctor.probes.system import parse_secure_boot, parse_wsl
from tests.machines import cpu_box, h200, write_tree


def test_h200_system(tmp_path):
    s = system.probe(h200(tmp_path))
    assert (s.os_id, s.os_version, s.os_codename, s.os_like) == ("ubuntu", "24.04", "noble", ("debian",))
    assert s.kernel == "6.18.44-fc-v657-gpu" and s.container == "docker" and s.wsl is None
    assert s.nouveau_loaded is False


def test_cpu_box_system(tmp_path):
    s = system.probe(cpu_box(tmp_path))
    assert (s.os_id, s.os_version) == ("debian", "12") and s.container == "docker"


def test_wsl_kernels():
    assert parse_wsl("Linux version 5.15.153.1-microsoft-standard-WSL2 (root@...) (gcc (GCC) 11.2.0)") == "wsl2"
    assert parse_wsl("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0)") == "wsl1"
    assert parse_wsl("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115)") is None


def test_secure_boot_efivar():
    assert parse_secure_boot(bytes([6, 0, 0, 0, 1])) is True
    assert parse_secure_boot(bytes([6, 0, 0, 0, 0])) is False
    assert parse_secure_boot(b"\x06") is None


def test_nouveau_and_secure_boot_from_files(tmp_path):
    root = write_tree(
        tmp_path / "r",
        {"/proc/modules": "nouveau 2768896 0 - Live 0x0\n", "/etc/os-release": 'ID=ubuntu\nVERSION_ID="22.04"\n'},
    )
    var = root / "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0a6c3b5ba5e"
    var.parent.mkdir(parents=True)
    var.write_bytes(bytes([6, 0, 0, 0, 1]))
    ctx = cpu_box(tmp_path)
    s = system.probe(ctx.__class__(root=root, env={"PATH": "/bin"}))
    assert s.nouveau_loaded is True and s.secure_boot is True and s.container is None


def test_container_kinds(tmp_path):
    root = write_tree(tmp_path / "r", {"/run/.containerenv": ""})
    assert system.detect_container(cpu_box(tmp_path).__class__(root=root, env={}))[0] == "podman"
    assert (
        system.detect_container(
            cpu_box(tmp_path).__class__(root=root, env={"KUBERNETES_SERVICE_HOST": "kubernetes.default.svc"})
        )[0]
        == "kubernetes"
    )
    assert (
        system.detect_container(
            cpu_box(tmp_path).__class__(root=tmp_path / "empty", env={"APPTAINER_CONTAINER": "x.sif"})
        )[0]
        == "apptainer"
    )


def test_secrets_in_env_are_masked(tmp_path):
    ctx = cpu_box(
        tmp_path,
        env={
            "PIP_INDEX_URL": "https://bob:hunter2@mirror.example/simple",
            "HF_TOKEN": "hf_abc",
            "CUDA_HOME": "/usr/local/cuda",
        },
    )
    env = system.probe(ctx).env
    assert env["PIP_INDEX_URL"] == "https://bob:***@mirror.example/simple" and "hunter2" not in str(env)
    assert env["HF_TOKEN"] == "***" and env["CUDA_HOME"] == "/usr/local/cuda"


def test_pci_h200_and_cpu_box(tmp_path):
    (dev,) = pci.probe(h200(tmp_path / "a")).devices
    assert (dev.address, dev.device_id, dev.class_code) == ("0000:00:06.0", "0x2335", "0x030200")
    assert (dev.subsystem_device_id, dev.kernel_driver) == ("0x18bf", "nvidia")
    assert pci.probe(cpu_box(tmp_path / "b")).devices == ()


def test_pci_name_from_system_pci_ids_and_bound_driver(tmp_path):
    ctx = h200(
        tmp_path, files={"/usr/share/hwdata/pci.ids": "10de  NVIDIA Corporation\n\t2335  GH100 [H200 SXM 141GB]\n"}
    )
    link = ctx.root / "sys/bus/pci/devices/0000:00:06.0/driver"
    link.unlink()
    link.symlink_to("../../../bus/pci/drivers/nouveau")
    (dev,) = pci.probe(ctx).devices
    assert dev.name == "GH100 [H200 SXM 141GB]" and dev.name_source == "/usr/share/hwdata/pci.ids"
    assert dev.kernel_driver == "nouveau"


def test_pci_without_sysfs(tmp_path):
    ctx = cpu_box(tmp_path)
    facts = pci.probe(ctx.__class__(root=tmp_path / "nothing", env={}))
    assert facts.devices == () and facts.error.kind == "unavailable"
