"""Masking: secrets always, personal details with --redact."""

from envdoctor.redact import Redactor, mask_data, mask_env, mask_text, mask_url


def test_urls_with_credentials_and_tokens():
    assert (
        mask_url("https://user:s3cret@mirror.example/whl/cu128?token=abc")
        == "https://user:***@mirror.example/whl/cu128?token=***"
    )
    assert mask_url("https://ghp_abc123@mirror.example/simple") == "https://***@mirror.example/simple"
    assert mask_url("https://download.pytorch.org/whl/cu128") == "https://download.pytorch.org/whl/cu128"
    assert (
        mask_text("pip install x --index-url https://a:b@h/simple ok")
        == "pip install x --index-url https://a:***@h/simple ok"
    )


def test_secret_environment_variables():
    assert mask_env("HF_TOKEN", "hf_abc") == "***" and mask_env("AWS_SECRET_ACCESS_KEY", "x") == "***"
    assert mask_env("CUDA_HOME", "/usr/local/cuda") == "/usr/local/cuda"


def test_short_host_name_is_not_replaced_inside_words():
    """On the H200 the host is called "vm": --redact turned "nvml" into "n<host>l"."""
    r = Redactor("vm", "root", "/root")
    assert (
        r.text("Driver 580 (from nvml) on vm, user root, /root/x")
        == "Driver 580 (from nvml) on <host>, user <user>, ~/x"
    )


def test_uuids_and_serials():
    r = Redactor(None, None, None, serials=["1653924042383"])
    assert r.text("GPU-06a5f464-881f-ab0f-b623-dcb0180a7d38 serial 1653924042383") == "GPU-<uuid> serial <serial>"


def test_a_password_with_a_quote_in_an_index_url_is_masked_whole():
    """The URL pattern stopped at the quote and left "ss@mirror" behind."""
    assert (
        mask_text("UV_INDEX_URL='https://me:pa'ss@mirror.example/simple'")
        == "UV_INDEX_URL='https://me:***@mirror.example/simple'"
    )


def test_credentials_in_docker_host_are_masked():
    assert (
        mask_env("DOCKER_HOST", "tcp://admin:hunter2@docker-host.example.com:2376")
        == "tcp://admin:***@docker-host.example.com:2376"
    )


def test_conda_token_channels_are_masked():
    assert (
        mask_text("channels: https://conda.anaconda.org/t/tk-83f2e9a0c1/nvidia")
        == "channels: https://conda.anaconda.org/t/***/nvidia"
    )


def test_conda_token_channel_in_its_short_form_is_masked():
    """Was shown whole in check's text, JSON, Markdown and the snapshot (the audit of issue 12):
    conda shows a token channel of anaconda.org as ``t/<token>/pytorch``."""
    assert mask_text("channels: t/TOKABC-1234-xyz987/pytorch, conda-forge") == "channels: t/***/pytorch, conda-forge"
    assert mask_data({"channels": ["t/TOKABC-1234-xyz987/pytorch", "defaults"]}) == {
        "channels": ["t/***/pytorch", "defaults"]
    }
    # what is not a channel's short name stays: a path inside a word, a "t/" at the end
    assert mask_text("art/abc/def and just t/ok") == "art/abc/def and just t/ok"


def test_secret_variable_names_that_were_missed():
    for name in (
        "NVIDIA_LICENSE_KEY",
        "CUDA_PRIVATE_KEY",
        "CONDA_PASS",
        "TORCH_SESSION_COOKIE",
        "NGC_CLI_API_KEY",
        "WANDB_API_KEY",
        "GITHUBTOKEN",
        "MY_APP_SECRETS",
        "PIP_PASSWORD",
        "DB_DSN",
    ):
        assert mask_env(name, "value123") == "***", name
    for name in (
        "PWD",
        "OLDPWD",
        "CUDA_HOME",
        "PATH",
        "PYTORCH_CUDA_ALLOC_CONF",
        "KEYRING_BACKEND",
        "NCCL_SOCKET_IFNAME",
    ):
        assert mask_env(name, "/x") == "/x", name


def test_values_shaped_like_credentials_are_masked_wherever_they_are():
    assert (
        mask_text("export TOKEN_FILE=x; echo hf_abcdefghijklmnopqrstuvwxyzABCDEF12") == "export TOKEN_FILE=x; echo ***"
    )
    assert mask_text("ghp_" + "a" * 36 + " and AKIAIOSFODNN7EXAMPLE") == "*** and ***"
    assert mask_text("curl -H 'Authorization: Bearer abcdefghijklmnop1234'") == "curl -H 'Authorization: Bearer ***'"
    assert mask_text("--password=hunter2 --api_key: abc123") == "--password=*** --api_key: ***"
    assert mask_text("the token sequence length is 4096") == "the token sequence length is 4096"


def test_an_unsplittable_url_still_has_its_password_masked():
    assert mask_url("http://user:pw@[::1/whl") == "http://user:***@[::1/whl"
