"""Local rehearsal: run a job's real training script on one CPU machine.

``trainkit rehearse jobs/<team>/<job>.py`` starts one torchrun per simulated
node, each with the env the operator would inject into that node's pod
(Training Operator v1.9 for a PyTorchJob, Kubeflow Trainer v2.3 for a
TrainJob; master address mapped to 127.0.0.1, a free port), the job's own
env and args (a TrainJob's over its runtime's), and the script in a temporary
directory standing in for ``/workspace``. Nothing here imports torch: it only
has to be installed for the interpreter running trainkit
(``pip install -e '.[rehearse]'``).
"""

from __future__ import annotations

from .definitions import choose_job, plan_trainjob, rehearse_file
from .launch import NodeLaunch, RehearsalPlan, plan_rehearsal
from .runner import RehearsalReport, rehearse, require_torch
from .target import Target, target_of

__all__ = [
    "NodeLaunch",
    "RehearsalPlan",
    "RehearsalReport",
    "Target",
    "choose_job",
    "plan_rehearsal",
    "plan_trainjob",
    "rehearse",
    "rehearse_file",
    "require_torch",
    "target_of",
]
