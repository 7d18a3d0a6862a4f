"""Masking: secrets always, personal details with --redact."""

from envdoctor.redact import Redactor, mask_env, mask_text, mask_url


def test_urls_with_credentials_and_tokens():
    assert mask_url("https://user:s3cret@mirror.example/whl/cu128?token=abc") == \
        "https://user:***@mirror.example/whl/cu128?token=***"
    assert mask_url("https://ghp_abc123@mirror.example/simple") == "https://***@mirror.example/simple"
    assert mask_url("https://download.pytorch.org/whl/cu128") == "https://download.pytorch.org/whl/cu128"
    assert mask_text("pip install x --index-url https://a:b@h/simple ok") == "pip install x --index-url https://a:***@h/simple ok"


def test_secret_environment_variables():
    assert mask_env("HF_TOKEN", "hf_abc") == "***" and mask_env("AWS_SECRET_ACCESS_KEY", "x") == "***"
    assert mask_env("CUDA_HOME", "/usr/local/cuda") == "/usr/local/cuda"


def test_short_host_name_is_not_replaced_inside_words():
    """On the H200 the host is called "vm": --redact turned "nvml" into "n<host>l"."""
    r = Redactor("vm", "root", "/root")
    assert r.text("Driver 580 (from nvml) on vm, user root, /root/x") == "Driver 580 (from nvml) on <host>, user <user>, ~/x"


def test_uuids_and_serials():
    r = Redactor(None, None, None, serials=["1653924042383"])
    assert r.text("GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38 serial 1653924042383") == "GPU-<uuid> serial <serial>"
