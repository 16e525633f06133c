"""What never leaves in an archive: files that hold credentials, and values that look
like tokens inside the files that do (docs/history.md, "Archives").

- Files left out by name: ``.netrc``, ``.git-credentials``, ``.pgpass``, enroot's
  ``.credentials``, ``credentials*``, ``.env`` and ``*.env``, keys and certificates
  (``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``id_rsa*``, ``id_ecdsa*``, ``id_ed25519*``),
  ``kubeconfig``, and names with a word ``token``, ``secret(s)``, ``password``,
  ``passwd``, ``api_key``/``apikey`` or ``credential(s)`` (``hf_token``, ``db.password``;
  not ``tokens_per_s.svg``), or a token shape (below) in the name itself.
- In every file but the binary formats below, whatever its bytes (a log with a NUL byte
  is still a log), line by line, replaced by ``<redacted>``: the value of an assignment
  whose name says it is secret (``HF_TOKEN=...``, ``"api_key": "..."``, ``password: ...``:
  names with TOKEN, SECRET, PASSWORD/PASSWD, API_KEY/APIKEY,
  ACCESS_KEY, PRIVATE_KEY, CREDENTIAL or AUTH), except a plain number named after
  tokens, or none (``"joules_per_token": 0.037`` or ``null``: a measurement; redacting it
  broke the JSON);
  the password of a URL (``https://user:<redacted>@host``); ``Bearer`` tokens; well-known
  token shapes (Hugging Face ``hf_``, GitHub ``ghp_``/``github_pat_``, NVIDIA ``nvapi-``,
  AWS ``AKIA``/``ASIA`` key ids, Slack ``xox?-``, GitLab ``glpat-``, OpenAI-style ``sk-``,
  JSON Web Tokens); and every line of a PEM private key block.
- Binary formats (``binary_format``: Parquet, PNG, JPEG, zip, gzip, zstd, SQLite, PDF,
  ELF...) cannot be redacted without breaking them: the archive scans them (their bytes,
  and what Parquet, zip, gzip and zstd files hold once decoded) and leaves out one in
  which a secret shows, as it leaves out a credential file.
"""

from __future__ import annotations

import fnmatch
import re

REDACTED = "<redacted>"
SECRET_FILE_PATTERNS = (
    ".netrc", ".git-credentials", ".pgpass", ".credentials", "credentials*", ".env", "*.env",
    "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ecdsa*", "id_ed25519*", "kubeconfig",
)  # fmt: skip
_SECRET_NAME_WORD = re.compile(
    r"(?:^|[._-])(?:token|secrets?|password|passwd|api[_-]?key|credentials?)(?:[._-]|$)"
)
_SECRET_WORDS = (
    r"token|secrets?|passw(?:or)?d|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth"
)
# A whole word of a name (``HF_TOKEN``, ``wandb.api_key``), never a part (``tokens_per_s``)
_NAME = (
    rf"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?:{_SECRET_WORDS})(?:[_.-][A-Za-z0-9]+)*"
    r"(?![A-Za-z0-9])"
)
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (?P<name>["']?{_NAME}["']?)      # a name that says it is secret
    (?P<sep>\s*[=:]\s*)              # = or :
    (?P<quote>["']?)
    (?P<value>[^\s"',;]+)            # its value, up to a quote, space, comma or ;
    """
)
_TOKEN_WORD = re.compile(r"(?i)(?<![A-Za-z0-9])token(?![A-Za-z0-9])")
_NUMBER = re.compile(
    r"(?i)[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?|null|none|nan|[-+]?(?:inf|infinity)"
)
"""A count or rate named after tokens (``joules_per_token``, ``"token_budget": 1e12``) is a
measurement, or none (``null``, ``NaN``): a token itself is never a plain decimal number."""
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)(?P<pw>[^@\s/]+)@")
_BEARER = re.compile(r"(?i)(?P<head>\bBearer\s+)(?P<token>[A-Za-z0-9._~+/=-]{8,})")
_TOKEN_SHAPES = re.compile(
    r"""(?x)
    \bhf_[A-Za-z0-9]{30,}
    | \bgh[pousr]_[A-Za-z0-9]{30,}
    | \bgithub_pat_[A-Za-z0-9_]{30,}
    | \bnvapi-[A-Za-z0-9_-]{30,}
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b
    | \bxox[abposr]-[A-Za-z0-9-]{10,}
    | \bglpat-[A-Za-z0-9_-]{20,}
    | \bsk-[A-Za-z0-9_-]{20,}
    | \beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}
    """
)
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")


BINARY_MAGIC = {
    b"PAR1": "parquet",
    b"\x89PNG\r\n\x1a\n": "png",
    b"\xff\xd8\xff": "jpeg",
    b"GIF8": "gif",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"SQLite format 3\x00": "sqlite",
    b"%PDF-": "pdf",
    b"\x7fELF": "elf",
}
"""File formats whose bytes cannot be edited in place, by their first bytes."""
MAGIC_BYTES = max(len(m) for m in BINARY_MAGIC)


def is_secret_file(name: str) -> bool:
    """True for a file name that holds credentials by convention (module docstring), or
    that holds a token itself."""
    lower = name.lower()
    return (
        bool(_SECRET_NAME_WORD.search(lower))
        or any(fnmatch.fnmatchcase(lower, pattern) for pattern in SECRET_FILE_PATTERNS)
        or bool(_TOKEN_SHAPES.search(name))
    )


def binary_format(head: bytes) -> str | None:
    """The binary format a file's first ``MAGIC_BYTES`` bytes announce, or None."""
    return next((kind for magic, kind in BINARY_MAGIC.items() if head.startswith(magic)), None)


def redact_line(line: str) -> tuple[str, int]:
    """The line with secret-looking values replaced, and how many were."""
    count = 0

    def assignment(m: re.Match[str]) -> str:
        nonlocal count
        if m.group("value") == REDACTED:
            return m.group(0)
        if _TOKEN_WORD.search(m.group("name")) and _NUMBER.fullmatch(m.group("value")):
            return m.group(0)
        count += 1
        return f"{m.group('name')}{m.group('sep')}{m.group('quote')}{REDACTED}"

    line, n_url = _URL_PASSWORD.subn(rf"\g<head>{REDACTED}@", line)
    line, n_bearer = _BEARER.subn(rf"\g<head>{REDACTED}", line)
    count += n_url + n_bearer
    line, n = _TOKEN_SHAPES.subn(REDACTED, line)
    line = _ASSIGNMENT.sub(assignment, line)  # last: a value already redacted is skipped
    return line, count + n


class Redactor:
    """Redacts the lines of one file in order (``redact_line``); a PEM private key block,
    which spans lines, is blanked whole. ``count``: redactions so far."""

    def __init__(self) -> None:
        self.count = 0
        self._in_key = False

    def line(self, line: str) -> str:
        if self._in_key or _PEM_BEGIN.search(line):
            self._in_key = not _PEM_END.search(line)
            self.count += 1
            return REDACTED + ("\n" if line.endswith("\n") else "")
        redacted, n = redact_line(line)
        self.count += n
        return redacted


def shows_secret(text: str) -> bool:
    """True when ``text`` holds anything ``redact_line`` would redact, or the start of a
    PEM private key."""
    return redact_line(text)[1] > 0 or bool(_PEM_BEGIN.search(text))
