"""Local rehearsal: run a job's real training script on one CPU machine.

``trainkit rehearse jobs/<team>/<job>.py`` plans the job with the platform and
runs the pods of its first cluster as the controllers will create them
(``trainkit.effective``): one torchrun per simulated node, each with the env
the operator would inject into that node's pod (Training Operator v1.9 for a
PyTorchJob, Kubeflow Trainer v2.3 for a TrainJob; master address mapped to
127.0.0.1, a free port), the pod's own env, command and args, and the pod's
``/workspace`` layout (a writable directory, the script files read-only).
An MPIJob runs its launcher's mpirun against a local hostfile; a RayJob gets a
local Ray cluster (a head and each worker group's nodes, with KubeRay's env) and
its entrypoint runs against it. Nothing here imports torch or ray: they only have
to be installed for the interpreter running trainkit (``pip install -e
'.[rehearse]'``, ``'.[ray]'``).
"""

from __future__ import annotations

from .definitions import choose_job, plan_job, rehearse_file, target_of, targets_for
from .launch import NodeLaunch, RehearsalPlan, plan_rehearsal
from .outcome import RehearsalReport
from .runner import rehearse, require_torch
from .target import Target
from .workspace import Protection, ReadOnly, prepare_workspace

__all__ = [
    "NodeLaunch",
    "Protection",
    "ReadOnly",
    "RehearsalPlan",
    "RehearsalReport",
    "Target",
    "choose_job",
    "plan_job",
    "plan_rehearsal",
    "prepare_workspace",
    "rehearse",
    "rehearse_file",
    "require_torch",
    "target_of",
    "targets_for",
]
