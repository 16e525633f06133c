"""NCCL's own account of the transport it chose, asked of every GPU launch: its INIT and NET
debug lines, each process into a file of its own in the attempt folder, so the train log
stays readable and ranks never write over each other (docs/transport.md).

``NCCL_DEBUG_SUBSYS=INIT,NET`` is the narrowest set that prints the network, the plugin,
GPUDirect RDMA per HCA (NET only) and the channels' transports (NCCL ``src/debug.cc``,
``src/transport/*.cc``; NVIDIA's EFA guide runs jobs with the same); the ``nccltrace``
variant adds ``COLL`` (one line per collective). ``NCCL_DEBUG_FILE`` expands ``%h`` to
the host name and ``%p`` to the process id; without ``%p`` every process of a node would
open and truncate the same file. The path is absolute (``$PWD``, the attempt folder,
which a container sees at the same path) because a rank's working directory is the
framework's business.
"""

from __future__ import annotations

from llmbench.core.devices import device
from llmbench.core.run_folder import NCCL_DEBUG_PATTERN
from llmbench.core.runspec import RunSpec
from llmbench.launch.shell import Raw, Word

"""Each process's file in the attempt folder: ``nccl-debug.<host>.<pid>.log``."""
SUBSYSTEMS = ("INIT", "NET")
TRACE_SUBSYSTEMS = ("COLL",)
DEBUG_FILE = f'"$PWD/{NCCL_DEBUG_PATTERN}"'


def gpu_launch(spec: RunSpec) -> bool:
    """The ranks run on GPUs, so they talk through NCCL (CPU ranks use gloo)."""
    return device(spec.gpu_type).nccl


def nccl_debug_env(spec: RunSpec) -> list[tuple[str, Word]]:
    """The variables launch.sh exports for the ranks (none for CPU ranks)."""
    if not gpu_launch(spec):
        return []
    subsystems = SUBSYSTEMS + (TRACE_SUBSYSTEMS if spec.variant == "nccltrace" else ())
    return [
        ("NCCL_DEBUG", "INFO"),
        ("NCCL_DEBUG_SUBSYS", ",".join(subsystems)),
        ("NCCL_DEBUG_FILE", Raw(DEBUG_FILE)),
    ]
