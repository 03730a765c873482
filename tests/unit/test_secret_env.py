"""A secret in a command's environment (a secret name, or a URL with credentials such as the
OPTLOG_DB_URL a remote tune worker gets) is never written into the ssh wrapper program (a command
line on both hosts) nor into a Slurm job script (a file): both hand it over out of band."""

from __future__ import annotations

from pathlib import Path

from optlog.runs.executors.slurm import batch_script
from optlog.runs.executors.ssh import wrapper_script
from optlog.runs.redact import secret_env

URL = "postgresql://postgres:s3cretpw@db.example:5432/optlog"
ENV = {"OPTLOG_DB_URL": URL, "HF_TOKEN": "hf_abcdefgh", "OPTLOG_TUNE_WORKER": "1"}


def test_secret_env_is_a_secret_name_or_a_url_with_credentials():
    assert secret_env("OPTLOG_DB_URL", URL) and secret_env("HF_TOKEN", "x")
    assert not secret_env("OPTLOG_DB_URL", "postgresql://db.example/optlog")  # no credentials in it
    assert not secret_env("OPTLOG_TUNE_WORKER", "1")


def test_ssh_wrapper_reads_secrets_from_the_channel_not_its_text():
    hidden: dict[str, str] = {}
    script = wrapper_script(["python", "-m", "optlog"], ENV, None, None, hidden)
    assert hidden == {"OPTLOG_DB_URL": URL, "HF_TOKEN": "hf_abcdefgh"}
    assert "s3cretpw" not in script and "hf_abcdefgh" not in script
    assert "OPTLOG_TUNE_WORKER=1" in script
    # read before the watchdog takes the channel, in the order the caller sends them
    assert script.index("read -r OPTLOG_DB_URL <&3") < script.index("read -r HF_TOKEN <&3") < script.index("setsid")


def test_slurm_script_takes_a_url_with_credentials_from_the_submitting_environment(tmp_path: Path):
    hidden: dict[str, str] = {}
    text = batch_script(["python", "-m", "optlog"], ENV, None, tmp_path / "rc", tmp_path / "info", hidden)
    assert "s3cretpw" not in text and "hf_abcdefgh" not in text
    assert hidden["OPTLOG_DB_URL"] == URL and "export OPTLOG_TUNE_WORKER=1" in text
