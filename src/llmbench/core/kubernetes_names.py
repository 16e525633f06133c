"""What the Kubernetes API server accepts as a name, a label key or value and a resource
name: site values are checked against these rules before anything is submitted, so a
bad one stops the sweep in one line instead of failing every run at submission.

The rules, from the Kubernetes documentation:

- "Object Names and IDs" (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/):
  an RFC 1123 label name (a namespace, a pod's volume) has at most 63 characters, only
  lowercase alphanumerics or '-', and starts and ends with an alphanumeric; a DNS
  subdomain name (most objects: a PersistentVolumeClaim, a ClusterTrainingRuntime, a
  Kueue LocalQueue) has at most 253 characters, lowercase alphanumerics, '-' or '.', and
  starts and ends with an alphanumeric. The API server checks a subdomain as RFC 1123
  labels joined by '.' (k8s.io/apimachinery, ``validation.IsDNS1123Subdomain``).
- "Labels and Selectors", syntax and character set
  (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
  a label key is an optional prefix, a DNS subdomain of at most 253 characters followed
  by '/', and a name of at most 63 characters, beginning and ending with an
  alphanumeric, with '-', '_', '.' and alphanumerics between; a label value has at most
  63 characters, may be empty, and otherwise begins and ends with an alphanumeric, with
  '-', '_', '.' and alphanumerics between.
- "Assign Extended Resources to a Container"
  (https://kubernetes.io/docs/tasks/configure-pod-container/extended-resource/):
  extended resources are fully qualified with a domain outside ``*.kubernetes.io/``, in
  the form ``example.com/foo``; the API server checks ``requests.<name>`` as a label key
  (k8s.io/kubernetes, ``helper.IsExtendedResourceName``).
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_NAME_MAX = 63
LABEL_VALUE_MAX = 63

_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})*"
_LABEL_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
QUOTA_PREFIX = "requests."
"""The prefix the API server puts before an extended resource name to check it."""

DNS1123_LABEL = (
    f"a DNS-1123 label: at most {DNS1123_LABEL_MAX} lowercase letters, digits and '-', "
    "starting and ending with a letter or digit"
)
DNS1123_SUBDOMAIN = (
    f"a DNS-1123 subdomain: at most {DNS1123_SUBDOMAIN_MAX} characters, DNS-1123 labels "
    "(lowercase letters, digits and '-', starting and ending with a letter or digit) "
    "joined by '.'"
)
LABEL_VALUE = (
    f"a label value: empty, or at most {LABEL_VALUE_MAX} letters, digits, '-', '_' and '.', "
    "starting and ending with a letter or digit"
)
LABEL_KEY = (
    "a label key: an optional DNS-1123 subdomain and '/', then a name of at most "
    f"{LABEL_NAME_MAX} letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit (e.g. nvidia.com/gpu.product)"
)
QUEUE_LABEL = (
    f"a Kueue LocalQueue name as a label value: at most {LABEL_VALUE_MAX} lowercase letters, "
    "digits, '-' and '.', starting and ending with a letter or digit"
)
EXTENDED_RESOURCE = (
    "an extended resource name: a domain outside kubernetes.io, '/' and a name of letters, "
    "digits, '-', '_' and '.' (e.g. nvidia.com/gpu, amd.com/gpu)"
)


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX and re.fullmatch(_DNS1123_LABEL, value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    return (
        len(value) <= DNS1123_SUBDOMAIN_MAX and re.fullmatch(_DNS1123_SUBDOMAIN, value) is not None
    )


def is_label_value(value: str) -> bool:
    return value == "" or (
        len(value) <= LABEL_VALUE_MAX and re.fullmatch(_LABEL_NAME, value) is not None
    )


def is_queue_label(name: str) -> bool:
    """A LocalQueue's name (a DNS subdomain) that is also a label value, as Kueue's
    queue-name label carries it."""
    return is_dns1123_subdomain(name) and is_label_value(name)


def is_label_key(key: str) -> bool:
    """A qualified name: ``[prefix/]name``."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return False
    return len(name) <= LABEL_NAME_MAX and re.fullmatch(_LABEL_NAME, name) is not None


def is_extended_resource_name(name: str) -> bool:
    domain, slash, _ = name.partition("/")
    native = domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return bool(slash) and not native and is_label_key(QUOTA_PREFIX + name)
