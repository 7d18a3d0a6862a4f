"""The torch + wheel choice, against hand-written answers (each a public fact, cited).

Every expectation here was worked out from the sources, not from envdoctor's table, so these tests
check the table too. Offline throughout: ``available`` is a fake where the live index matters.
"""

import pytest
from packaging.specifiers import SpecifierSet

from envdoctor.advise.choose import choose_variant
from envdoctor.advise.request import IndexAnswer, SpecError, parse_torch_spec
from envdoctor.table import load_table

T = load_table()
CU12X_OR_NEWER = ("cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132")


def choose(spec, driver, ccs, python="3.12", glibc="2.39", arch="x86_64", **kw):
    return choose_variant(T, spec, driver, ccs, python, glibc, arch, **kw)


# --- specifiers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2.1", "==2.1.*"),
        ("2", "==2.*"),
        ("2.7.1", "==2.7.1"),
        ("2.7.*", "==2.7.*"),
        (">=2.4,<2.6", "<2.6,>=2.4"),
        ("~=2.5.0", "~=2.5.0"),
    ],
)
def test_torch_spec_forms(text, expected):
    assert str(parse_torch_spec(text)) == str(SpecifierSet(expected))


@pytest.mark.parametrize("text", ["banana", ">>2.4", "2.x"])
def test_bad_torch_spec_is_a_spec_error(text):
    with pytest.raises(SpecError):
        parse_torch_spec(text)


def test_spec_picks_the_newest_patch_inside_it():
    # 2.7 had 2.7.0 and 2.7.1 (torchvision 0.22.1); ">=2.4,<2.6" ends at 2.5.1 (torchvision 0.20.1).
    assert choose("2.7", "580.95.05", ["8.9"]).torch == "2.7.1"
    assert choose("2.7.0", "580.95.05", ["8.9"]).torch == "2.7.0"
    c = choose(">=2.4,<2.6", "580.95.05", ["8.9"])
    assert (c.torch, c.torchvision, c.torchaudio) == ("2.5.1", "0.20.1", "2.5.1")


# --- GPUs and drivers ----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, "2.8", "2.10", "2.11", "2.13"])
def test_pascal_on_driver_580_gets_cu126_never_cu128_or_newer(spec):
    # Maxwell/Pascal were never in any cu128+ wheel (pytorch/pytorch#146265, dev-discuss 3128);
    # cu126 keeps sm_60, which runs on the GTX 1080 Ti's 6.1 (same major, lower minor).
    c = choose(spec, "580.95.05", ["6.1"])
    assert c.variant == "cu126" and c.compatibility == "direct"
    assert c.status == "ok"


def test_pascal_default_is_the_newest_release_with_cu126():
    # 2.13 ships cu126 (test-infra 6d36e31f: release cuda 12.6, 13.0, 13.2); 2.14 is a release
    # candidate only, so offline envdoctor does not offer it.
    assert choose(None, "580.95.05", ["6.1"]).label == "torch 2.13.0+cu126"


@pytest.mark.parametrize("spec", [None, "2.7", "2.8", "2.9", "2.10", "2.11"])
def test_rtx_5090_on_driver_570_gets_cu128(spec):
    # sm_120 first shipped in 2.7 cu128 (#145792); cu126 has no Blackwell; CUDA 13 needs R580
    # (13.0 GA: >= 580.65.06), so R570 cannot run cu130/cu132; 12.8 GA needs 570.26.
    c = choose(spec, "570.133.20", ["12.0"])
    assert c.variant == "cu128" and c.compatibility == "direct"


def test_rtx_5090_on_driver_570_default_is_2_11_and_the_upgrade_to_580_opens_cu130():
    # cu128 ends with 2.11 (#178665: 12.8 deprecated for 2.12).
    c = choose(None, "570.133.20", ["12.0"])
    assert c.label == "torch 2.11.0+cu128"
    up = [w for w in c.ways_out if w.kind == "upgrade-driver"]
    assert up and up[0].branch == "580" and up[0].variant == "cu130"


def test_rtx_5090_before_2_7_has_no_kernels_and_says_what_works_today():
    c = choose("2.6", "570.133.20", ["12.0"])
    assert c.status == "no-fit" and c.torch is None
    today = [w for w in c.ways_out if w.kind == "works-today"]
    assert today and (today[0].torch, today[0].variant) == ("2.11.0", "cu128")


@pytest.mark.parametrize(
    "spec, variant",
    [
        (None, "cu126"),  # 2.13: cu128 gone; cu130/cu132 have no sm_70 and need R580 anyway
        ("2.7", "cu126"),  # 2.7 cu128 left Volta out (#147607)
        ("2.8", "cu128"),  # Volta back in cu128 for 2.8-2.10 (#157517)
        ("2.10", "cu128"),  # 2.10.0+cu128 get_arch_list starts at sm_70 (#182250)
        ("2.11", "cu126"),  # dropped again in 2.11 (#172598)
    ],
)
def test_v100_on_driver_570(spec, variant):
    assert choose(spec, "570.133.20", ["7.0"]).variant == variant


def test_python_3_8_stops_at_torch_2_4():
    # 2.4 is the last release with cp38 wheels (2.5: 3.9-3.12); H100 sm_90 is in 2.4 cu124.
    c = choose(None, "580.95.05", ["9.0"], python="3.8")
    assert c.label == "torch 2.4.1+cu124"
    assert any(r.what == "torch 2.5.1" and "Python 3.8" in r.reason for r in c.rejected)


def test_python_3_7_on_an_a100_gets_1_13_cu117():
    # 1.13 is the last release with cp37 (3.7-3.10); its CUDA variants are cu116/cu117.
    assert choose(None, "580.95.05", ["8.0"], python="3.7").label == "torch 1.13.1+cu117"


def test_free_threaded_3_13t_stops_at_2_11():
    # 2.12 dropped CPython 3.13t (test-infra 4fa7ce0e / #182951).
    assert choose(None, "580.95.05", ["9.0"], python="3.13t").label == "torch 2.11.0+cu130"


@pytest.mark.parametrize("spec", [None, "2.0", "2.1", "2.4", "2.5"])
def test_rtx_3090_ti_on_driver_515_never_gets_cuda_12(spec):
    # 515 runs CUDA 11.7 directly (11.7 GA: 515.43.04), 11.8 only by minor-version compatibility
    # (11.8 needs 520.61.05; the 11.x floor is 450.80.02); CUDA 12.x needs >= 525.60.13.
    c = choose(spec, "515.65.01", ["8.6"], python="3.10")
    assert c.variant in ("cu117", "cu118") and c.variant not in CU12X_OR_NEWER
    assert c.compatibility == ("direct" if c.variant == "cu117" else "minor-version")


def test_rtx_3090_ti_on_driver_515_torch_2_0_takes_cu117_directly():
    c = choose("2.0", "515.65.01", ["8.6"], python="3.10")
    assert c.label == "torch 2.0.1+cu117" and c.compatibility == "direct"


def test_minor_version_choice_warns_and_offers_both_roads():
    c = choose(None, "515.65.01", ["8.6"], python="3.10")
    assert c.variant == "cu118" and c.compatibility == "minor-version"
    assert any("minor-version compatibility" in w for w in c.warnings)
    kinds = {w.kind: w for w in c.ways_out}
    assert kinds["direct"].variant == "cu117" and kinds["direct"].torch == "2.0.1"
    assert kinds["upgrade-driver"].branch == "580"


def test_rtx_3090_ti_on_driver_515_offline_gets_the_newest_cu118_torch_2_7_1():
    # Written from the sources, not from envdoctor's output:
    # - 515 runs CUDA 11.7 directly (11.7 GA: 515.43.04), 11.8 only by minor-version compatibility
    #   (11.8 GA needs 520.61.05; the 11.x floor is 450.80.02); CUDA 12.x needs >= 525.60.13.
    # - the newest torch with cu118 wheels is 2.7: 11.8 is in the release CUDA list of the 2.7
    #   go-live matrix (pytorch/test-infra@bad60f65) and not in 2.8's (@21480431: 12.6, 12.8, 12.9);
    #   its newest patch is 2.7.1 (test-infra 30ee1aaa "Release 2.7.1 update stable version"),
    #   paired with torchvision 0.22.1 and torchaudio 2.7.1.
    # - 2.7's cu118 arch list is inferred from the 2.5 build script (sm_86 in every cu11x list since
    #   1.10), so the wheels are used offline, with a warning that the kernel list is inferred.
    # - cu117 stops at torch 2.0 (2.0: cu117/cu118; 2.1: cu118/cu121), so 2.0.1+cu117 is the direct road.
    c = choose(None, "515.65.01", ["8.6"], python="3.10")
    assert (c.torch, c.variant, c.compatibility) == ("2.7.1", "cu118", "minor-version")
    assert (c.torchvision, c.torchaudio) == ("0.22.1", "2.7.1")
    assert c.index_check == "offline-table" and c.status == "ok" and not c.unconfirmed
    assert c.kernels_inferred
    assert any("kernel list of torch 2.7.1 cu118 is inferred" in w and "compute 8.6 (sm_86)" in w for w in c.warnings)
    assert not any(r.what == "torch 2.7.1 cu118" for r in c.rejected)
    direct = [w for w in c.ways_out if w.kind == "direct"]
    assert [(w.torch, w.variant) for w in direct] == [("2.0.1", "cu117")]
    assert "without minor-version compatibility" in direct[0].text


def test_a_variant_whose_wheels_may_not_exist_is_still_skipped_offline():
    # An RTX 5090 on R575: 2.13's only variant with sm_120 that R575 runs is cu129 (CUDA 13.x needs
    # R580), and 2.13 cu129 was added to the test channel only (test-infra 0f7335e1): whole-row
    # unconfirmed, so offline it is passed over (as is 2.12's, also test channel only) while a
    # confirmed build fits: 2.11 cu128 (12.8 GA needs 570.26).
    c = choose(None, "575.57.08", ["12.0"])
    assert c.label == "torch 2.11.0+cu128" and not c.kernels_inferred
    assert any(r.what == "torch 2.13.0 cu129" and "does not confirm" in r.reason for r in c.rejected)


def test_require_known_kernels_skips_inferred_arch_lists():
    # 2.6's and 2.7's cu118 lists are inferred; 2.5.1's is read from builder release/2.5.
    c = choose(None, "515.65.01", ["8.6"], python="3.10", require_known_kernels=True, ways_out=False)
    assert c.label == "torch 2.5.1+cu118" and not c.kernels_inferred
    assert any(r.what == "torch 2.7.1 cu118" and "infers its kernel list" in r.reason for r in c.rejected)


def test_no_gpu_gets_cpu_wheels():
    c = choose(None, None, [])
    assert (c.status, c.variant, c.index_url) == ("cpu", "cpu", "https://download.pytorch.org/whl/cpu")
    assert c.compatibility == "none" and c.torch == "2.13.0"


def test_gpu_without_driver_plans_for_branch_580():
    # R580 is the newest confirmed long-term branch; it runs CUDA 13.0 (>= 580.65.06) directly.
    c = choose(None, None, ["8.9"])
    assert c.driver_needed == "580" and c.label == "torch 2.13.0+cu130"


def test_kepler_without_driver_plans_for_its_last_branch_470():
    # R470 is Kepler's last branch; 470 runs CUDA 11.8 by minor-version compatibility (>= 450.80.02).
    # The newest torch with cu118 wheels is 2.7 (test-infra bad60f65: release CUDA 11.8/12.6/12.8;
    # 2.8's matrix 21480431 has no 11.8), but its sm_37 is inferred, so the choice says so and names
    # 2.5.1+cu118, whose sm_37 is read from builder release/2.5 build_cuda.sh, as the confirmed road.
    c = choose(None, None, ["3.7"], python="3.10")
    assert c.driver_needed == "470"
    assert c.label == "torch 2.7.1+cu118" and c.compatibility == "minor-version"
    assert c.kernels_inferred and any("kernel list of torch 2.7.1 cu118 is inferred" in w for w in c.warnings)
    confirmed = [w for w in c.ways_out if w.kind == "confirmed-kernels"]
    assert [(w.torch, w.variant) for w in confirmed] == [("2.5.1", "cu118")]


def test_hopper_on_a_515_driver_cannot_run_at_all():
    # Hopper arrived with CUDA 11.8, whose driver floor is 520.61.05: R515 does not know the GPU.
    c = choose(None, "515.65.01", ["9.0"])
    assert c.status == "no-fit"
    assert "Hopper" in c.warnings[0] and "520" in c.warnings[0]
    assert [w.branch for w in c.ways_out if w.kind == "upgrade-driver"] == ["580"]


def test_rtx_3090_on_driver_450_51_gets_nothing_but_an_upgrade():
    # sm_86 needs CUDA 11.1 (455.23); 450.51 is also below the 11.x MVC floor 450.80.02.
    c = choose(None, "450.51.06", ["8.6"], python="3.10")
    assert c.status == "no-fit"
    assert {w.kind for w in c.ways_out} == {"upgrade-driver", "cpu"}


def test_pascal_on_driver_590_is_told_to_install_580():
    # R580 is the last branch for Maxwell, Pascal and Volta (CUDA 13.2 release notes 2.6.2).
    c = choose(None, "590.44.01", ["6.1"])
    assert c.status == "no-fit"
    way = [w for w in c.ways_out if w.kind == "install-driver"][0]
    assert way.branch == "580" and way.variant == "cu126"


def test_glibc_2_17_keeps_torch_at_2_6_without_cu126():
    # From 2.7 all Linux wheels are manylinux_2_28; 2.6 cu126 was already built on that image.
    c = choose(None, "550.54.15", ["8.0"], glibc="2.17", python="3.10")
    assert c.label == "torch 2.6.0+cu124"
    assert any(r.what == "torch 2.6.0 cu126" and "glibc 2.28" in r.reason for r in c.rejected)


def test_grace_hopper_aarch64_gets_cu130():
    # 2.13 aarch64 cu130 carries sm_90 (build_env_setup.py at 83d50900).
    assert choose(None, "580.95.05", ["9.0"], arch="aarch64").label == "torch 2.13.0+cu130"


def test_grace_hopper_with_torch_2_5_has_no_cuda_aarch64_wheel():
    # Before 2.9 the CUDA aarch64 wheels were not on download.pytorch.org for 2.5 (CPU only).
    c = choose("2.5", "580.95.05", ["9.0"], arch="aarch64")
    assert c.status == "no-fit"
    assert any("linux_aarch64" in r.reason for r in c.rejected)
    assert [(w.torch, w.variant) for w in c.ways_out if w.kind == "works-today"] == [("2.13.0", "cu130")]


def test_gpu_of_unknown_capability_still_gets_cuda_wheels():
    # An NVIDIA GPU the table cannot name is still a GPU: CUDA wheels, kernels unchecked.
    c = choose(None, "580.95.05", [None])
    assert c.label == "torch 2.13.0+cu130" and c.status == "ok"
    assert not any("kernels for every GPU" in r for r in c.reasons)


# --- the live index ------------------------------------------------------------------------------


def fake_index(present):
    def available(variant, version):
        if present is None:
            return IndexAnswer(None, "cannot resolve host download.pytorch.org")
        return IndexAnswer((variant, version) in present, f"{variant} {version}")

    return available


def test_live_index_overrules_the_table():
    present = {("cu130", "2.11.0"), ("cu130", "2.10.0")}
    c = choose(None, "580.95.05", ["9.0"], available=fake_index(present))
    assert c.label == "torch 2.11.0+cu130" and c.index_check == "live"
    assert any(r.what == "torch 2.13.0 cu130" for r in c.rejected)


def test_live_index_confirms_a_variant_the_table_doubts():
    # 2.13 cu129 is in the test channel only as far as the table knows; if the index has it, use it.
    c = choose("2.13", "575.57.08", ["12.0"], available=fake_index({("cu129", "2.13.0")}))
    assert c.label == "torch 2.13.0+cu129" and c.index_check == "live"


def test_index_failure_falls_back_to_the_table_and_says_so():
    c = choose(None, "570.133.20", ["12.0"], available=fake_index(None))
    assert c.label == "torch 2.11.0+cu128"
    assert c.index_check.startswith("failed: cannot resolve host")


# --- nothing fits, GPU or not: "no-fit" with the real reason (user-acceptance review) --------------


def _ways(c):
    return {w.kind: w for w in c.ways_out}


def test_no_gpu_and_no_release_matching_the_spec_is_no_fit_not_cpu_without_a_torch():
    # Was: Choice("cpu", torch=None) -> "Install no torch from None", exit 0. The newest release the
    # table confirms is 2.13 (its newest patch 2.13.0); 2.14 is a release candidate, unconfirmed.
    c = choose(">=9", None, [], python="3.11", glibc="2.36")
    assert c.status == "no-fit" and c.torch is None and not c.ok
    way = _ways(c)["torch-spec"]
    assert way.text.startswith("no torch release matches '>=9'; the newest envdoctor knows is 2.13.0")
    assert (way.torch, way.variant) == ("2.13.0", "cpu")


def test_no_gpu_and_a_patch_that_never_existed_names_the_patches_of_its_minor():
    # torch 2.1 had 2.1.0, 2.1.1 and 2.1.2 (torchvision 0.16.0-0.16.2); there was no 2.1.5.
    c = choose("2.1.5", None, [], python="3.11", glibc="2.36")
    assert c.status == "no-fit"
    way = _ways(c)["torch-spec"]
    assert "no torch 2.1.5 in envdoctor's table: torch 2.1 has 2.1.0, 2.1.1, 2.1.2" in way.text
    assert (way.torch, way.variant) == ("2.1.2", "cpu")


def test_no_gpu_torch_1_13_on_python_3_11_names_python_3_10():
    # torch 1.13 shipped cp37-cp310 wheels; Python 3.11 wheels arrived with 2.0.
    c = choose("1.13", None, [], python="3.11", glibc="2.36")
    assert c.status == "no-fit"
    way = _ways(c)["older-python"]
    assert way.text == (
        "torch 1.13 has no wheels for Python 3.11 (it has 3.7-3.10); Python 3.10 would allow torch 1.13.1+cpu"
    )
    assert _ways(c)["works-today"].torch == "2.13.0"


def test_no_gpu_python_3_15_has_no_wheels_yet_and_3_14_does():
    # torch 2.13 wheels: cp310-cp314 (+cp314t); no release has cp315.
    c = choose(None, None, [], python="3.15", glibc="2.36")
    assert c.status == "no-fit"
    assert [w.text for w in c.ways_out] == ["Python 3.15 has no torch wheels yet; 3.14 does (torch 2.13.0+cpu)"]


def test_no_gpu_python_2_7_has_no_torch_wheels_at_all():
    c = choose(None, None, [], python="2.7", glibc="2.36")
    assert c.status == "no-fit"
    assert [w.text for w in c.ways_out] == ["Python 2.7 has no torch wheels; Python 3.12 would allow torch 2.13.0+cpu"]


UBUNTU_1804_CUDA_LINES = (
    "10.2",
    "11.0",
    "11.1",
    "11.2",
    "11.3",
    "11.4",
    "11.5",
    "11.6",
    "11.7",
    "11.8",
    "12.0",
    "12.1",
)


def test_other_roads_do_not_blame_python_when_nvcc_is_the_limit():
    # Was: "Python 3.12 instead of 3.11 would allow torch 2.13.0+cu126", yet 2.13 has cp311 wheels.
    # With a system nvcc from NVIDIA's ubuntu1804 repository (newest toolkit line 12.1), torch's CUDA
    # must be one of its lines: cu118 ends with 2.7 (2.7.1), cu121 with 2.5; 2.13 needs cu126+.
    c = choose(None, "535.104.05", ["8.6"], python="3.11", glibc="2.35", cudas=UBUNTU_1804_CUDA_LINES)
    assert c.label == "torch 2.7.1+cu118"
    kinds = _ways(c)
    assert "newer-python" not in kinds and "older-python" not in kinds
    assert "up to CUDA 12.1" in kinds["without-nvcc"].text and kinds["without-nvcc"].torch == "2.13.0"
    # the driver upgrade opens nothing within the repository's CUDA lines, so it is not offered
    assert "upgrade-driver" not in kinds


def test_other_roads_name_glibc_and_nvcc_on_ubuntu_18_04():
    # Ubuntu 18.04: glibc 2.27; torch 2.7+ wheels are manylinux_2_28 (glibc 2.28).
    c = choose(None, "535.104.05", ["8.6"], python="3.11", glibc="2.27", cudas=UBUNTU_1804_CUDA_LINES)
    assert c.label == "torch 2.6.0+cu118"
    kinds = _ways(c)
    assert "newer-python" not in kinds
    assert kinds["newer-glibc"].text.startswith("glibc 2.27 holds torch at 2.6.0: torch 2.7.1+cu118 needs glibc 2.28")
    assert kinds["limits"].text.startswith("glibc 2.27 and the CUDA toolkits NVIDIA's repository has")
    assert "Python" not in kinds["limits"].text and kinds["limits"].torch == "2.13.0"


def test_python_is_named_when_it_is_the_limit():
    # Python 3.8: the last torch with cp38 wheels is 2.4 (2.4.1).
    c = choose(None, "580.95.05", ["8.9"], python="3.8")
    assert c.torch == "2.4.1"
    assert _ways(c)["newer-python"].text.startswith("Python 3.12 instead of 3.8 would allow torch 2.13.0+")


def test_minor_version_warning_on_driver_470_leaves_out_cuda_11_0_history():
    # The CUDA 11.x minor-version notes also say 11.0 shipped with 450.36/450.51: true, but nothing
    # that fails for an 11.8 wheel on R470.
    c = choose(None, "470.82.01", ["6.1"], python="3.10")
    assert c.compatibility == "minor-version" and c.cuda == "11.8"
    mvc = [w for w in c.warnings if "minor-version compatibility" in w]
    assert mvc and "cudaErrorCallRequiresNewerDriver" in mvc[0]
    assert not any("CUDA 11.0 itself" in w for w in c.warnings)


def test_wsl2_windows_driver_is_held_to_the_windows_minimums():
    # Windows driver 560.70 under WSL2: CUDA 12.6 needs 560.76 on Windows (560.28.03 on Linux)
    linux = choose_variant(T, "2.8", "560.70", ["8.9"], "3.12", "2.35")
    assert (linux.label, linux.compatibility) == ("torch 2.8.0+cu126", "direct")
    win = choose_variant(T, "2.8", "560.70", ["8.9"], "3.12", "2.35", os="windows")
    assert (win.label, win.compatibility) == ("torch 2.8.0+cu129", "minor-version")  # no 2.8 build runs directly
    assert "driver 560.70 runs CUDA 12.9 by minor-version compatibility (CUDA 12.9 needs 576.02)" in win.reasons
    # the ways out keep the Windows minimums: a retry under os="windows" still finds no direct fit
    assert not any(w.kind == "direct" for w in win.ways_out)
    c = choose_variant(T, "2.8", "566.36", ["8.9"], "3.12", "2.35", os="windows", require_direct=True)
    assert c.label == "torch 2.8.0+cu126"  # 566.36 >= 560.76; cu128 needs 570.65
    c = choose_variant(T, None, "581.57", ["8.9"], "3.12", "2.35", os="windows")
    assert (
        c.variant == "cu130"
        and ("envdoctor's table has no Windows driver minimum for CUDA 13.0; the Linux one (580.65.06) stands in")
        in c.warnings
    )
