"""What never leaves in an archive: files that hold credentials, and values that look
like tokens inside the text files that do (docs/history.md, "Archives").

- Files left out by name: ``.netrc``, ``.git-credentials``, ``.pgpass``, enroot's
  ``.credentials``, ``credentials*``, ``.env`` and ``*.env``, keys and certificates
  (``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``id_rsa*``, ``id_ecdsa*``, ``id_ed25519*``),
  ``kubeconfig``, and names with a word ``token``, ``secret(s)``, ``password``,
  ``passwd``, ``api_key``/``apikey`` or ``credential(s)`` (``hf_token``, ``db.password``;
  not ``tokens_per_s.svg``).
- In text files (no NUL byte in the first 8 KiB), replaced by ``<redacted>``: the value of
  an assignment whose name says it is secret (``HF_TOKEN=...``, ``"api_key": "..."``,
  ``password: ...``: names with TOKEN, SECRET, PASSWORD/PASSWD, API_KEY/APIKEY,
  ACCESS_KEY, PRIVATE_KEY, CREDENTIAL or AUTH); the password of a URL
  (``https://user:<redacted>@host``); ``Bearer`` tokens; well-known token shapes (Hugging
  Face ``hf_``, GitHub ``ghp_``/``github_pat_``, NVIDIA ``nvapi-``, AWS ``AKIA``/``ASIA``
  key ids, Slack ``xox?-``, GitLab ``glpat-``, OpenAI-style ``sk-``, JSON Web Tokens); and
  every line of a PEM private key block.
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


def is_secret_file(name: str) -> bool:
    """True for a file name that holds credentials by convention (module docstring)."""
    lower = name.lower()
    return bool(_SECRET_NAME_WORD.search(lower)) or any(
        fnmatch.fnmatchcase(lower, pattern) for pattern in SECRET_FILE_PATTERNS
    )


def is_text(head: bytes) -> bool:
    return b"\0" not in head


def redact_line(line: str) -> tuple[str, int]:
    """The line with secret-looking values replaced, and how many were."""
    count = 0

    def assignment(m: re.Match[str]) -> str:
        nonlocal count
        if m.group("value") == REDACTED:
            return m.group(0)
        count += 1
        return f"{m.group('name')}{m.group('sep')}{m.group('quote')}{REDACTED}"

    line, n_url = _URL_PASSWORD.subn(rf"\g<head>{REDACTED}@", line)
    line, n_bearer = _BEARER.subn(rf"\g<head>{REDACTED}", line)
    count += n_url + n_bearer
    line, n = _TOKEN_SHAPES.subn(REDACTED, line)
    line = _ASSIGNMENT.sub(assignment, line)  # last: a value already redacted is skipped
    return line, count + n


def redact_text(lines: list[str]) -> tuple[list[str], int]:
    """Every line redacted (``redact_line``), PEM private key blocks blanked whole."""
    out, count, in_key = [], 0, False
    for line in lines:
        if in_key or _PEM_BEGIN.search(line):
            in_key = not _PEM_END.search(line)
            out.append(REDACTED + ("\n" if line.endswith("\n") else ""))
            count += 1
            continue
        redacted, n = redact_line(line)
        out.append(redacted)
        count += n
    return out, count
