"""Config values that reach another system (a shell, Slurm, pyxis, Kubernetes, Run:ai, an
object store), checked against what that system accepts before anything runs.

Launch files quote every value they carry (``llmbench.launch.shell``); these checks add
what quoting cannot: a value the receiving system would refuse or misread (a namespace of
80 characters, a ':' inside a PYTHONPATH entry), a secret that would be written to disk
(a password inside a URL), and counts no platform node can hold. ``config.check_config``
runs them, so ``llmbench plan`` and the workflow refuse exactly the same values.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from llmbench.core.devices import device
from llmbench.core.images import parse_image
from llmbench.core.kubernetes_names import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    EXTENDED_RESOURCE,
    LABEL_KEY,
    LABEL_VALUE,
    QUEUE_LABEL,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_extended_resource_name,
    is_label_key,
    is_label_value,
    is_queue_label,
)
from llmbench.core.launchers import PLATFORM_SITE_BLOCKS, launcher_traits
from llmbench.core.platform_site import DEFAULT_SECRET_ENV
from llmbench.core.runspec import RunSpec
from llmbench.errors import ConfigError, LaunchError

POD_CPUS_MAX = 768
"""CPUs one pod of CPU ranks may ask for (ranks per node x threads per rank): a pod runs on
one node, and Kubernetes counts a hardware thread as one CPU; 768 is a two-socket server
with today's largest CPUs (2 x 192 cores, 2 threads each). More never schedules."""
POLL_SHARE_OF_STALL = 0.5
"""A platform launcher copies the rank-0 log once per status poll, so the run's log grows
at most once per ``poll_s``: the longest poll is half the watchdog's stall allowance,
leaving the other half for the API calls and the ranks' own time between log lines."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
"""C0 controls and DEL, and Unicode's bidirectional overrides and isolates (a value that
reads differently on screen than it is: "Trojan Source", CVE-2021-42574)."""
MAX_VALUE_CHARS = 4096
"""Longest string value: a path (Linux's PATH_MAX), a URL, a name; a megabyte-long value
would reach launch.sh's command line and fail there ("Argument list too long")."""
SHM_PATH = "/dev/shm"
"""Where both platforms mount the pods' shared memory (the manifest's memory-backed
volume, Run:ai's largeShmRequest): no PVC may mount there."""
RESERVED_VOLUMES = ("dshm",)
"""Volume names the Kubernetes manifest uses itself (``launch.kubernetes._volumes``)."""
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")
"""An http(s) URL of the characters RFC 3986 allows (unreserved, reserved and '%')."""
STAGE_PATH_SEPARATORS = ",:{}"
"""Characters a stage path may not hold: pyxis separates its --container-mounts with ',' and
':', and Snakemake reads '{' and '}' in an output path as wildcards."""
_PORTABLE_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._/-]*")
"""An absolute path of POSIX portable filename characters (IEEE Std 1003.1, "Portable
Filename Character Set": letters, digits, '.', '_', '-') and '/'."""


def dotted_key(parts: Iterable[Any]) -> str:
    """A config key as messages name it: ``sweeps[0].scales[1]``, ``kubernetes.queue``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _strings(node: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str, str]]:
    """(dotted key, text) of every string in the config, mapping keys included."""
    if isinstance(node, str):
        yield dotted_key(path), node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str):
                yield dotted_key((*path, "<key>")), key
            yield from _strings(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, (*path, index))


def check_control_characters(config: Mapping[str, Any], source: str) -> None:
    """No value holds a line break, NUL or other control character: every one reaches a
    file, a command line or an API field that reads it as one line."""
    for where, text in _strings(config):
        if _CONTROL.search(text):
            raise ConfigError(
                f"{source}: {where}: {text!r} holds a control character (a line break, tab, "
                "NUL or bidirectional override); allowed: one line of printable text"
            )


def check_lengths(config: Mapping[str, Any], source: str) -> None:
    """No string value longer than ``MAX_VALUE_CHARS``."""
    for where, text in _strings(config):
        if len(text) > MAX_VALUE_CHARS:
            raise ConfigError(
                f"{source}: {where}: {text!r} is {len(text):,} characters long; allowed: "
                f"at most {MAX_VALUE_CHARS:,}"
            )


def masked_url(url: str) -> str:
    """``url`` with its user:password@ part replaced, for messages."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"***@{host}").geturl()


def _credentials_in_url(url: str) -> bool:
    try:
        return "@" in urlsplit(url).netloc
    except ValueError:  # e.g. an unbalanced '[' in the host: not a URL with userinfo
        return False


def _block_value(config: Any, block: str, key: str) -> str:
    node = config.get(block) if isinstance(config, Mapping) else None
    value = node.get(key) if isinstance(node, Mapping) else None
    return value if isinstance(value, str) else ""


def check_credentials(raw: Any, source: str) -> None:
    """No URL carries user:password@: the site file is read into launch.sh, run_spec.json,
    the Run:ai payload, run.json and the report. Run on the config as read, before the
    schema, so that no other message echoes the password."""
    base_url = _block_value(raw, "runai", "base_url")
    if _credentials_in_url(base_url):
        secret_env = _block_value(raw, "runai", "secret_env") or DEFAULT_SECRET_ENV
        raise ConfigError(
            f"{source}: runai.base_url: {masked_url(base_url)!r} holds credentials "
            "(user:password@); allowed: https://<host>/api/v1 without them; the "
            f"Application secret goes in the environment variable runai.secret_env names "
            f"(${secret_env}), read by name and never written"
        )
    path = _block_value(raw, "history", "path")
    if "://" in path and _credentials_in_url(path):
        raise ConfigError(
            f"{source}: history.path: {masked_url(path)!r} holds credentials "
            "(user:password@); allowed: a URL without them; the object store reads its own "
            "credentials from the environment (for S3: AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or ~/.aws/credentials)"
        )


def check_urls(config: Mapping[str, Any], source: str) -> None:
    """The Run:ai API's URL goes to launch.sh and the submit job's HTTP client as is: of
    RFC 3986's characters, and one the client can take apart (a host, a port that is a
    number, an IPv6 address in brackets)."""
    base_url = config["runai"].get("base_url") or ""
    if base_url and not _URL.fullmatch(base_url):
        raise ConfigError(
            f"{source}: runai.base_url: {base_url!r} is not a URL; allowed: "
            "https://<host>/api/v1 of the characters RFC 3986 allows (no spaces, quotes, "
            "backticks, '<' '>' '{' '}' '|' '\\' '^')"
        )
    try:
        parts = urlsplit(base_url)
        valid = not base_url or (bool(parts.hostname) and (parts.port is None or parts.port > 0))
    except ValueError as err:  # an unbalanced '[', a port that is not a number
        valid, why = False, str(err)
    else:
        why = "no host" if base_url and not parts.hostname else "port 0"
    if not valid:
        raise ConfigError(
            f"{source}: runai.base_url: {base_url!r} is not a URL ({why}); allowed: "
            "https://<host>[:<port>]/api/v1, an IPv6 host in brackets"
        )
    if base_url and parts.scheme == "http" and not _loopback(parts.hostname or ""):
        raise ConfigError(
            f"{source}: runai.base_url: {base_url!r} is plain http to another machine (the "
            "Application secret would cross the network unencrypted); allowed: "
            "https://<host>/api/v1, or http:// to this machine (a test stand-in)"
        )


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_paths(config: Mapping[str, Any], source: str) -> None:
    """Paths that reach a list with separators of its own (a mount list, PYTHONPATH) or a
    pod's shell script."""
    stage = config["stage_path"]
    found = sorted({c for c in stage if c in STAGE_PATH_SEPARATORS})
    if found:
        raise ConfigError(
            f"{source}: stage_path: {stage!r} holds {' '.join(map(repr, found))}; allowed: a "
            "folder path without ',' ':' (pyxis separates its container mounts with them) "
            "or '{' '}' (Snakemake reads them as wildcards)"
        )
    for block in PLATFORM_SITE_BLOCKS:
        src = config[block].get("llmbench_src") or ""
        if src and not _PORTABLE_ABSOLUTE_PATH.fullmatch(src):
            raise ConfigError(
                f"{source}: {block}.llmbench_src: {src!r} is not allowed; allowed: the "
                "absolute path of llmbench's src folder inside the pod, of letters, digits, "
                "'.', '_', '-' and '/' (e.g. /workspace/llmbench/src; it joins PYTHONPATH)"
            )


def _check(source: str, key: str, value: str, valid: Callable[[str], bool], rule: str) -> None:
    if not valid(value):
        raise ConfigError(f"{source}: {key}: {value!r} is not allowed; allowed: {rule}")


def check_kubernetes(site: Mapping[str, Any], source: str) -> None:
    """``kubernetes:`` values as the API server checks them (``llmbench.core.kubernetes_names``)."""
    if "namespace" in site:
        _check(
            source,
            "kubernetes.namespace",
            site["namespace"],
            is_dns1123_label,
            DNS1123_LABEL,
        )
    if "runtime" in site:
        _check(
            source,
            "kubernetes.runtime",
            site["runtime"],
            is_dns1123_subdomain,
            f"a ClusterTrainingRuntime name, {DNS1123_SUBDOMAIN}",
        )
    if site.get("queue"):
        _check(source, "kubernetes.queue", site["queue"], is_queue_label, QUEUE_LABEL)
    if "gpu_resource" in site:
        _check(
            source,
            "kubernetes.gpu_resource",
            site["gpu_resource"],
            is_extended_resource_name,
            EXTENDED_RESOURCE,
        )
    for key, value in (site.get("node_selector") or {}).items():
        _check(source, "kubernetes.node_selector", key, is_label_key, f"keys: {LABEL_KEY}")
        _check(source, f"kubernetes.node_selector.{key}", value, is_label_value, LABEL_VALUE)
    for index, toleration in enumerate(site.get("tolerations") or []):
        check_toleration(toleration, f"kubernetes.tolerations[{index}]", source)


def check_toleration(toleration: Mapping[str, Any], where: str, source: str) -> None:
    """One toleration by the API server's rules (``ValidateTolerations`` in
    k8s.io/kubernetes pkg/apis/core/validation/validation.go): a key is a label key; an
    empty key needs operator Exists (it matches every taint); Equal (the default) takes
    a label value, Exists no value; tolerationSeconds only with effect NoExecute. A
    negative tolerationSeconds, which Kubernetes reads as 0, is refused as a typo."""
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key:
        _check(source, f"{where}.key", key, is_label_key, LABEL_KEY)
    value = toleration.get("value", "")
    _check(source, f"{where}.value", value, is_label_value, LABEL_VALUE)
    if value and operator == "Exists":
        raise ConfigError(
            f"{source}: {where}.value: {value!r} with operator Exists; allowed: no value "
            "(Exists matches any), or operator Equal"
        )
    if not key and operator != "Exists":
        raise ConfigError(
            f"{source}: {where}: no key with operator {operator}; allowed: a key, or "
            "operator Exists (which, without a key, tolerates every taint)"
        )
    seconds = toleration.get("tolerationSeconds")
    if seconds is not None and toleration.get("effect") != "NoExecute":
        effect = toleration.get("effect") or "(none)"
        raise ConfigError(
            f"{source}: {where}.tolerationSeconds: {seconds} with effect {effect}; allowed: "
            "tolerationSeconds only with effect NoExecute (how long a pod stays after the "
            "taint appears)"
        )
    if seconds is not None and seconds < 0:
        raise ConfigError(
            f"{source}: {where}.tolerationSeconds: {seconds}; allowed: 0 or more seconds "
            "(Kubernetes reads a negative value as 0: evicted at once)"
        )


def check_platform_values(config: Mapping[str, Any], source: str) -> None:
    """The values both platform launchers share: volumes and the image."""
    check_kubernetes(config["kubernetes"], source)
    for block in PLATFORM_SITE_BLOCKS:
        check_pvcs(config[block].get("pvcs") or [], block, source)
        image = config[block].get("image")
        if image:
            try:
                parse_image(image)  # the grammar `images:` values are checked against
            except LaunchError as err:
                raise ConfigError(f"{source}: {block}.image: {err}") from None
    check_pods_hf_home(config, source)


def check_pods_hf_home(config: Mapping[str, Any], source: str) -> None:
    """A platform's pods see the site's ``hf_home`` only on one of their volumes."""
    block, hf_home = launcher_traits(config["launcher"]).site_block, config.get("hf_home")
    if not block or not hf_home:
        return
    mounts = [str(entry).split(":")[1] for entry in config[block].get("pvcs") or []]
    cache = posixpath.normpath(hf_home)
    if not any(posixpath.commonpath([cache, posixpath.normpath(m)]) == posixpath.normpath(m)
               for m in mounts):  # fmt: skip
        raise ConfigError(
            f"{source}: hf_home: {hf_home!r} is on none of the {block} pods' volumes "
            f"({', '.join(mounts) or f'no {block}.pvcs'}); allowed: a folder under a mount "
            f"path of {block}.pvcs"
        )


def check_pvcs(entries: Sequence[str], block: str, source: str) -> None:
    """``name:/mount/path:claimName`` entries: names and claims as Kubernetes takes them,
    mount paths of portable characters, and no two volumes of one name or one mount path
    (the API server refuses both: "must be unique"), none on the pods' ``/dev/shm``."""
    names: dict[str, int] = {}
    paths: dict[str, int] = {SHM_PATH: -1}
    for index, entry in enumerate(entries):
        name, path, claim = entry.split(":")  # the schema's pattern: name:/path:claimName
        where = f"{block}.pvcs[{index}]"
        _check(source, f"{where}: volume name", name, is_dns1123_label, DNS1123_LABEL)
        _check(source, f"{where}: claimName", claim, is_dns1123_subdomain, DNS1123_SUBDOMAIN)
        if not _PORTABLE_ABSOLUTE_PATH.fullmatch(path):
            raise ConfigError(
                f"{source}: {where}: mount path {path!r} is not allowed; allowed: an absolute "
                "path of letters, digits, '.', '_', '-' and '/'"
            )
        if name in names or name in RESERVED_VOLUMES:
            first = f"{block}.pvcs[{names[name]}]" if name in names else "the pods' /dev/shm"
            raise ConfigError(
                f"{source}: {where}: volume name {name!r} is already used by {first}; "
                "allowed: a name of its own for each volume"
            )
        mounted = posixpath.normpath(path)
        if mounted in paths:
            first = f"{block}.pvcs[{paths[mounted]}]" if paths[mounted] >= 0 else "the pods' shm"
            raise ConfigError(
                f"{source}: {where}: mount path {path!r} is already mounted by {first}; "
                "allowed: a path of its own for each volume (not /dev/shm)"
            )
        names[name], paths[mounted] = index, index


def check_history(config: Mapping[str, Any], source: str) -> None:
    """``history.add`` appends to a history, which ``history.path`` (the profile's site
    value, merged in) must name."""
    history = config["history"]
    if history["add"] and not history["path"]:
        raise ConfigError(
            f"{source}: history.add: true needs history.path; allowed: a folder or URL in "
            "history.path (config or profile), or history.add: false"
        )


def check_platform_runs(specs: Sequence[RunSpec], source: str) -> None:
    """What one pod of a platform launcher can hold and how often it is polled."""
    for spec in specs:
        traits = launcher_traits(spec.launcher)
        if not traits.platform:
            continue
        cpus = spec.gpus_per_node * spec.threads_per_rank
        if not device(spec.gpu_type).has_gpus and cpus > POD_CPUS_MAX:
            raise ConfigError(
                f"{source}: run {spec.run_id}: {spec.gpus_per_node} CPU ranks x "
                f"threads_per_rank={spec.threads_per_rank} in one pod on launcher "
                f"{spec.launcher}; allowed: at most {POD_CPUS_MAX} CPUs per pod (one node's "
                "hardware threads); set ranks_per_node to spread the ranks over pods"
            )
        poll_s = float(spec.platform.get("poll_s") or traits.poll_s)
        assert spec.limits is not None
        longest = spec.limits.stall_s * POLL_SHARE_OF_STALL
        if poll_s > longest:
            raise ConfigError(
                f"{source}: {traits.site_block}.poll_s: {poll_s:g} is more than half of run "
                f"{spec.run_id}'s stall allowance ({spec.limits.stall_s} s, watchdog.stall_s); "
                f"allowed: at most {longest:g} (the log is copied once per poll, and a log "
                "that does not grow for stall_s is a hang)"
            )


def check_values(config: Mapping[str, Any], source: str) -> None:
    """Every check of this module that reads the config alone (``config.validate_and_expand``)."""
    check_platform_values(config, source)
    check_paths(config, source)
    check_urls(config, source)
    check_control_characters(config, source)
    check_lengths(config, source)
    check_history(config, source)
