"""The MPI launcher's wait for its hosts: an init container that returns once every host of
the hostfile accepts the launcher's ssh, or fails after a bound.

mpirun starts the ranks over ssh at once and fails on the first host it cannot reach: a name
that does not resolve yet fails at once (ssh's ConnectionAttempts retries refused
connections only), so a launcher started beside its workers would burn its backoff while
they pull their image. mpi-operator publishes a worker's name only once it is Ready
(kubeflow/mpi-operator pkg/controller/mpi_job_controller.go newJobService); Trainer's nodes
have names at once but sshd listens only once they run. The check is the one mpirun makes:
ssh with the job's key and the image's ssh configuration (on the port the hosts' sshd listens
on, when it is not the image's), so it also fails (boundedly) on a key the image cannot use.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["WAIT_SECONDS", "wait_for_hosts"]

WAIT_SECONDS = 900
"""How long the launcher waits for its hosts per attempt; a failed attempt counts against
the launcher's backoff like any restart."""

# $1: the hostfile, $2: seconds. Hosts are the first word of each line, before any ":slots"
# (Intel MPI, MPICH); the pod itself (a launcher that is a host too) runs no sshd.
_SCRIPT = """\
set -u
self=$(cat /etc/hostname)
end=$(( $(date +%s) + $2 ))
for host in $(cut -d' ' -f1 "$1" | cut -d: -f1); do
  case "$host" in "$self"|"$self".*) continue ;; esac
  until ssh{port} -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no \\
      -o UserKnownHostsFile=/dev/null "$host" true 2>/dev/null; do
    if [ "$(date +%s)" -ge "$end" ]; then
      echo "wait-for-hosts: $host did not accept ssh within $2 s" >&2
      exit 1
    fi
    sleep 5
  done
done
"""


def wait_for_hosts(
    image: str,
    *,
    hostfile_volume: str,
    ssh_volume: str,
    ssh_dir: str,
    resources: dict[str, Any],
    pull_policy: str | None = None,
    port: int | None = None,
) -> dict[str, Any]:
    """The init container ``wait-for-hosts`` of a launcher pod: ``image`` (the launcher's,
    whose ssh mpirun uses), the operator's hostfile and ssh key volumes mounted where the
    launcher has them, and the launcher's ``resources`` (the pod's QoS stays its own); ``port``:
    the hosts' sshd port when ssh must not use the image's (a host network)."""
    c: dict[str, Any] = {"name": "wait-for-hosts", "image": image}
    if pull_policy is not None:
        c["imagePullPolicy"] = pull_policy
    # sh -c SCRIPT NAME ARGS...: NAME is $0.
    script = _SCRIPT.format(port="" if port is None else f" -p {port}")
    c["command"] = ["sh", "-c", script, "wait-for-hosts", "/etc/mpi/hostfile", str(WAIT_SECONDS)]
    c["resources"] = copy.deepcopy(resources)  # never shared: no YAML anchors
    c["volumeMounts"] = [
        {"mountPath": "/etc/mpi", "name": hostfile_volume, "readOnly": True},
        {"mountPath": ssh_dir, "name": ssh_volume, "readOnly": True},
    ]
    return c
