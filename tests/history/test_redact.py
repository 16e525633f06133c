"""The secret rules of archives (llmbench.history.redact)."""

from __future__ import annotations

import pytest

from llmbench.history.redact import REDACTED, Redactor, is_secret_file, redact_line


def redact_text(lines: list[str]) -> tuple[list[str], int]:
    """Every line redacted (``Redactor``), and how many redactions."""
    redactor = Redactor()
    out = [redactor.line(line) for line in lines]
    return out, redactor.count


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("export HF_TOKEN=hf_" + "x" * 34, "export HF_TOKEN=<redacted>"),
        ('"wandb_api_key": "0123abcd"', '"wandb_api_key": "<redacted>"'),
        ("password: swordfish", "password: <redacted>"),
        ("AWS_SECRET_ACCESS_KEY=abc/def+ghi", "AWS_SECRET_ACCESS_KEY=<redacted>"),
        ("git clone https://u:p4ss@host/r.git", "git clone https://u:<redacted>@host/r.git"),
        ("Authorization: Bearer eyJhbGciOi.abc", "Authorization: Bearer <redacted>"),
        ("key id AKIAABCDEFGHIJKLMNOP here", "key id <redacted> here"),
        ("NGC nvapi-" + "Z" * 40, "NGC <redacted>"),
    ],
)
def test_secret_values_are_redacted(line: str, expected: str) -> None:
    redacted, count = redact_line(line)
    assert redacted == expected and count >= 1


@pytest.mark.parametrize(
    "line",
    [
        "Training epoch 0, iteration 3/49 | lr: 0.003 | reduced_train_loss: 9.1 | "
        "train_step_timing in s: 0.04 | consumed_samples: 64",
        "NCCL INFO comm 0x55 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE",
        "tokens_per_s: 85459 | tflops_per_gpu: 612.3",
        "llmbench rank 0/2 on node n1",
    ],
)
def test_log_lines_stay_as_they_are(line: str) -> None:
    assert redact_line(line) == (line, 0)


def test_private_key_blocks_are_blanked() -> None:
    lines = ["a\n", "-----BEGIN OPENSSH PRIVATE KEY-----\n", "b3BlbnNzaC1rZXk\n",
             "-----END OPENSSH PRIVATE KEY-----\n", "c\n"]  # fmt: skip
    out, count = redact_text(lines)
    assert out == ["a\n", *[REDACTED + "\n"] * 3, "c\n"] and count == 3


@pytest.mark.parametrize(
    ("name", "secret"),
    [(".netrc", True), ("hf_token", True), ("HF_TOKEN.txt", True), ("id_rsa", True),
     ("tls.key", True), (".env", True), ("secrets.yaml", True), ("tokens_per_s.svg", False),
     ("train.log", False), ("run.json", False), ("keyboard.txt", False)],
)  # fmt: skip
def test_secret_file_names(name: str, secret: bool) -> None:
    assert is_secret_file(name) is secret
