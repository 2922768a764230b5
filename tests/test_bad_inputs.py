"""A corpus of broken inputs, each run through the real CLI in a copy of the examples.

Every case starts from a successful ``trainkit synth`` of the example jobs/ (made once
per session; its generated/ is linked into the copy, see ``_broken``), breaks one
thing (an edit of a real example file, a new file, or a hand-edited copy of a generated
manifest), runs one command and asserts:

- exit status 1 and no traceback;
- the report names the file (with the line), the object and the field, as trainkit prints
  them: ``error: FILE:LINE: OBJECT: FIELD: message`` on stderr for synth and check,
  ``FILE`` then ``  line LINE: OBJECT: FIELD: message`` on stdout for validate (which
  prints its report there and the count on stderr);
- distinctive parts of the message: what is allowed, or how to fix it;
- the number of problems, so that one mistake gives one message;
- ``generated/`` is byte-identical afterwards: nothing was written.

Cases whose problems one step of the command finds file by file share a copy and one run
(``batches``): the breaks of a batch are in different files, and no case of a batch is
judged by a step that another's problem would stop (``Case.stage``). Each case still
asserts its own lines and their number; ``test_a_batch_reports_its_cases_and_nothing_else``
asserts that the batch's report holds nothing else.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, RepoCaches, Run, Workspace, copy_tree
from trainkit.cli import main

RESNET = "jobs/vision/resnet50_ddp.py"
RESNET_TJ = "jobs/vision/resnet50_trainjob.py"
RESNET_SCRIPT = "jobs/vision/scripts/train_resnet.py"
FSDP = "jobs/llm/llama_finetune_fsdp.py"
SFT = "jobs/llm/llama_sft_trainjob.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
MOBILENET = "jobs/vision/mobilenet_ps.py"
MOBILENET_ROLES = "jobs/vision/mobilenet_ps_roles.py"
PI = "jobs/llm/pi_mpi.py"
PADDLE = "jobs/vision/resnet_paddle.py"
RAY = "jobs/llm/lr_sweep_ray.py"
KUEUE = "jobs/platform/kueue.py"
CLUSTERS = "jobs/platform/clusters.py"
TEAMS = "jobs/platform/teams.py"
RUNTIMES = "jobs/platform/runtimes.py"
POLICY = "jobs/platform/policy.py"

GEN = "generated/clusters/gpu-east"
PYTORCHJOB_YAML = f"{GEN}/vision/pytorchjob-resnet50-ddp.yaml"
TRAINJOB_YAML = f"{GEN}/vision/trainjob-resnet50-r1.yaml"
RUNTIME_YAML = f"{GEN}/platform/runtimes/torch-2-5.yaml"
QUEUE_YAML = f"{GEN}/platform/queues/vision.yaml"

# Where a runtime's pod spec lives in a ClusterTrainingRuntime.
RT_POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"

CRDS = "{crds}"  # replaced by the directory of the CRDs trainkit renders for

A_JOB = """\
from trainkit import PyTorchJob, Resources

{var} = PyTorchJob(
    name="{name}",
    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",
    command=["python", "-c", "pass"],
    resources=Resources(cpu=1, memory="1Gi"),
)
"""


@dataclass(frozen=True)
class Case:
    """One broken input and what trainkit must say about it.

    ``edits`` are (file, old, new) replacements, ``old`` occurring exactly once; ``writes``
    are (file, text) new files; ``copy`` (source, destination) copies a file first (a
    generated manifest to hand-edit outside generated/). ``line``, ``obj`` and ``field``
    are None where trainkit has none to give (a syntax error names no object). ``line``
    is an anchor: the text of the line, found in the file as broken (the first line
    holding it), so an edit of an example moves no case.
    ``problems`` is None where the count is not the point (see the case's comment).

    ``stage`` names the step that reports the problem, for a case that may share a copy and
    a run with others of that step (``batches``): ``load`` (each definition file runs on its
    own, and its problems stop only that file), ``plan`` and ``policy`` (every object is
    judged, and the step's problems stop the next steps: a case of a later step would find
    nothing), ``validate`` (each manifest file is validated on its own). Only a case whose
    problems are all in ``file`` and whose breaks change no platform file (which every job
    is judged against) has a ``plan`` or ``policy`` stage; None runs the case alone.
    """

    id: str
    file: str
    line: str | tuple[str, str] | None
    obj: str | None
    field: str | None
    says: tuple[str, ...]
    edits: tuple[tuple[str, str, str], ...] = ()
    writes: tuple[tuple[str, str], ...] = ()
    copy: tuple[str, str] | None = None
    command: tuple[str, ...] = ("synth",)
    problems: int | None = 1
    stage: str | None = None

    @property
    def touched(self) -> set[str]:
        """The files the case breaks or reports: a batch's cases share none."""
        return {self.file, *(rel for rel, _, _ in self.edits), *(rel for rel, _ in self.writes)}

    def line_in(self, root: Path) -> int | None:
        """The line of the anchor in the broken file under ``root``."""
        if self.line is None:
            return None
        # (after, anchor): the first line holding the anchor after the one holding ``after``.
        after, anchor = self.line if isinstance(self.line, tuple) else ("", self.line)
        text = (root / self.file).read_text(encoding="utf-8").splitlines()
        start = next((i for i, line in enumerate(text) if after in line), 0)
        found = [i for i, line in enumerate(text[start:], start + 1) if anchor in line]
        assert found, f"anchor {self.line!r} not in {self.file}"
        return found[0]

    def located(self, root: Path) -> str:
        """How the problem's line in the report starts, down to the field.

        validate groups its report by file (the file on a line of its own, then its
        problems); synth and check print one ``error:`` line per problem.
        """
        line = self.line_in(root)
        if self.command[0] == "validate":
            parts = [f"line {line}"] if line is not None else []
            head = "  "
        else:
            parts = [self.file if line is None else f"{self.file}:{line}"]
            head = "error: "
        parts += [x for x in (self.obj, self.field) if x]
        return head + ": ".join(parts) + ": "


def validate(manifest: str, old: str, new: str, **kw: Any) -> Case:
    """``trainkit validate`` of a copy of a generated manifest, edited by hand outside
    generated/ (in a directory of the case's own: the cases' copies are validated together)."""
    dest = f"edited/{kw['id']}/{Path(manifest).name}"
    return Case(
        file=dest,
        copy=(manifest, dest),
        edits=((dest, old, new),),
        command=("validate", dest, "--crds", CRDS),
        stage="validate",
        **kw,
    )


CASES = [
    # --- definitions: fields, types and bounds ---------------------------------------
    Case(
        id="field-typo-procs_per_nodes",
        stage="load",
        edits=((RESNET, "procs_per_node=8", "procs_per_nodes=8"),),
        file=RESNET,
        line="procs_per_nodes=8,",
        obj="PyTorchJob 'resnet50-ddp'",
        field="procs_per_nodes",
        says=("unknown field; did you mean 'procs_per_node'?",),
    ),
    Case(
        id="trainjob-field-typo-num_nodes",
        stage="load",
        edits=((RESNET_TJ, "    nodes=2,", "    num_nodes=2,"),),
        file=RESNET_TJ,
        line="num_nodes=2,",
        obj="TrainJob 'resnet50'",
        field="num_nodes",
        says=("unknown field; did you mean 'nodes'?",),
    ),
    Case(
        id="resources-field-typo-gpus",
        stage="load",
        edits=((RESNET, "gpu=8)", "gpus=8)"),),
        # Resources(...) is built before the job: the line is its own, the object is it.
        file=RESNET,
        line='resources=Resources(cpu=32, memory="256Gi", gpus=8),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="resources.gpus",
        says=("unknown field; did you mean 'gpu'?",),
    ),
    Case(
        id="nodes-wrong-type",
        stage="load",
        edits=((RESNET, "    nodes=2,", '    nodes="two",'),),
        file=RESNET,
        line='nodes="two",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="nodes",
        says=("must be a whole number",),
    ),
    Case(
        id="env-value-not-a-string",
        stage="load",
        edits=(
            (SFT, '"OUTPUT_PATH": "/mnt/output"}', '"OUTPUT_PATH": "/mnt/output", "EPOCHS": 3}'),
        ),
        file=SFT,
        line='env={"TRAIN_DATA_PATH": "/mnt/data", "OUTPUT_PATH": "/mnt/output", "EPOCHS": 3},',
        obj="TrainJob 'llama-sft'",
        field="env.EPOCHS",
        says=("must be text (a str)",),
    ),
    Case(
        id="gpu-negative",
        stage="load",
        edits=((RESNET, "gpu=8)", "gpu=-1)"),),
        file=RESNET,
        line='resources=Resources(cpu=32, memory="256Gi", gpu=-1),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="resources.gpu",
        says=("must be at least 0",),
    ),
    Case(
        id="cpu-negative",
        stage="load",
        edits=((RESNET, "cpu=32,", "cpu=-32,"),),
        file=RESNET,
        line='resources=Resources(cpu=-32, memory="256Gi", gpu=8),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="resources.cpu",
        says=("-32 is negative; quantities must be ≥ 0",),
    ),
    Case(
        id="memory-not-a-quantity",
        stage="load",
        edits=((RESNET, 'memory="256Gi"', 'memory="256GG"'),),
        file=RESNET,
        line='resources=Resources(cpu=32, memory="256GG", gpu=8),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="resources.memory",
        says=("'256GG' is not a Kubernetes quantity", "e.g. 8, '500m', '64Gi'"),
    ),
    Case(
        id="nodes-zero",
        stage="load",
        edits=((RESNET, "    nodes=2,", "    nodes=0,"),),
        file=RESNET,
        line="nodes=0,",
        obj="PyTorchJob 'resnet50-ddp'",
        field="nodes",
        says=("must be at least 1",),
    ),
    Case(
        id="procs_per_node-zero",
        stage="load",
        edits=((RESNET, "procs_per_node=8", "procs_per_node=0"),),
        file=RESNET,
        line="procs_per_node=0,",
        obj="PyTorchJob 'resnet50-ddp'",
        field="procs_per_node",
        says=("must be at least 1",),
    ),
    Case(
        id="deadline-negative",
        stage="load",
        edits=((FSDP, "deadline_seconds=7 * 24 * 3600", "deadline_seconds=-1"),),
        file=FSDP,
        line="deadline_seconds=-1,",
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field="deadline_seconds",
        says=("must be at least 1",),
    ),
    Case(
        id="restart-policy-unknown",
        stage="load",
        edits=((FSDP, 'restart_policy="ExitCode"', 'restart_policy="Sometimes"'),),
        file=FSDP,
        line='restart_policy="Sometimes",',
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field="restart_policy",
        says=("must be one of 'OnFailure', 'Never' or 'ExitCode'",),
    ),
    Case(
        id="restart-policy-always",
        stage="load",
        edits=((FSDP, 'restart_policy="ExitCode"', 'restart_policy="Always"'),),
        file=FSDP,
        line='restart_policy="Always",',
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field="restart_policy",
        says=("'Always' restarts the Master even after it exits 0, so the job never succeeds",),
    ),
    Case(
        id="toleration-operator-unknown",
        stage="load",
        edits=((FSDP, 'operator="Exists"', 'operator="Exist"'),),
        file=FSDP,
        line='tolerations=[Toleration(key="nvidia.com/gpu", operator="Exist", effect="NoSchedule")],',
        obj="Toleration",
        field="operator",
        says=("must be one of 'Equal' or 'Exists'",),
    ),
    Case(
        id="volume-claim-invalid-name",
        stage="load",
        edits=((FSDP, 'claim="llm-checkpoints"', 'claim="LLM_checkpoints"'),),
        file=FSDP,
        line='Volume(claim="LLM_checkpoints", path="/mnt/output"),',
        obj="Volume",
        field="claim",
        says=("'LLM_checkpoints' is not a valid name", "lowercase letters, digits and '-'"),
    ),
    Case(
        id="volume-mounted-twice",
        stage="load",
        edits=((FSDP, 'path="/mnt/output"', 'path="/mnt/data"'),),
        file=FSDP,
        line="job = PyTorchJob(",
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field=None,
        says=("volumes mount more than once at /mnt/data",),
    ),
    Case(
        id="trainjob-run-zero",
        stage="load",
        edits=((RESNET_TJ, "run=1,", "run=0,"),),
        file=RESNET_TJ,
        line="run=0,",
        obj="TrainJob 'resnet50'",
        field="run",
        says=("must be at least 1",),
    ),
    Case(
        id="queue-capacity-gpu-negative",
        stage="load",
        edits=((TEAMS, "gpu=32)", "gpu=-32)"),),
        file=TEAMS,
        line='capability=Capacity(cpu=256, memory="2Ti", gpu=-32),',
        obj="Queue 'vision'",
        field="capability.gpu",
        says=("must be at least 0",),
    ),
    # --- definitions: reserved env --------------------------------------------------
    Case(
        id="env-PET_NNODES-on-pytorchjob",
        stage="load",
        edits=((RESNET, "    nodes=2,", '    env={"PET_NNODES": "2"},\n    nodes=2,'),),
        file=RESNET,
        line='env={"PET_NNODES": "2"},',
        obj="PyTorchJob 'resnet50-ddp'",
        field="env",
        says=(
            "PET_NNODES may not be set: PET_* variables are torchrun's settings, injected by "
            "the operator from nodes and procs_per_node — remove it from env",
        ),
    ),
    Case(
        id="env-MASTER_ADDR-on-pytorchjob",
        stage="load",
        edits=(
            (
                FSDP,
                '"NCCL_DEBUG": "INFO",',
                '"NCCL_DEBUG": "INFO",\n        "MASTER_ADDR": "10.0.0.1",',
            ),
        ),
        file=FSDP,
        line="env={",
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field="env",
        says=("MASTER_ADDR may not be set: the Training Operator sets it", "remove it from env"),
    ),
    Case(
        id="env-WORLD_SIZE-on-trainjob",
        stage="load",
        edits=(
            (
                SFT,
                '"OUTPUT_PATH": "/mnt/output"}',
                '"OUTPUT_PATH": "/mnt/output", "WORLD_SIZE": "32"}',
            ),
        ),
        file=SFT,
        line='env={"TRAIN_DATA_PATH": "/mnt/data", "OUTPUT_PATH": "/mnt/output", "WORLD_SIZE": "32"},',
        obj="TrainJob 'llama-sft'",
        field="env",
        says=("WORLD_SIZE may not be set: torchrun sets it to nodes × procs_per_node",),
    ),
    # --- definitions: references to the platform ------------------------------------
    Case(
        id="queue-unknown",
        stage="plan",
        edits=((RESNET, 'queue="vision"', 'queue="visoin"'),),
        file=RESNET,
        line='queue="visoin",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="queue",
        says=(
            "team 'vision' may not use queue 'visoin'; its queues: 'vision' (Team in jobs/platform/teams.py)",
        ),
    ),
    Case(
        id="queue-of-another-team",
        stage="plan",
        edits=((RESNET, 'queue="vision"', 'queue="llm"'),),
        file=RESNET,
        line='queue="llm",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="queue",
        says=("team 'vision' may not use queue 'llm'; its queues: 'vision'",),
    ),
    Case(
        id="volcano-default-queue-not-granted",
        stage="plan",
        edits=((RESNET, 'queue="vision"', 'queue="default"'),),
        file=RESNET,
        line='queue="default",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="queue",
        says=(
            "team 'vision' may not use queue 'default'; its queues: 'vision' (Team in "
            "jobs/platform/teams.py); Volcano's own queue 'default' is the platform's to grant: "
            'it lists "default" in the Team\'s queues',
        ),
    ),
    Case(
        id="volcano-default-queue-on-a-kueue-cluster",
        edits=(
            (TEAMS, 'queues=["llm"],', 'queues=["llm", "default"],'),
            (RAY, 'queue="llm",', 'queue="default",'),
        ),
        file=RAY,
        line='queue="default",',
        obj="RayJob 'lr-sweep-ray'",
        field="queue",
        says=(
            "queue 'default' is no Kueue ClusterQueue on cluster 'h100-south'; the team's queues "
            "there: 'llm'; 'default' here is Volcano's own queue, which Kueue clusters lack",
        ),
    ),
    Case(
        id="volcano-default-queue-generated",
        stage="load",
        edits=((TEAMS, "\nvision = Team(", '\nshared = Queue(name="default")\n\nvision = Team('),),
        file=TEAMS,
        line='shared = Queue(name="default")',
        obj="Queue 'default'",
        field=None,
        says=(
            "queue 'default' is created and kept by Volcano itself; a generated Queue of that "
            "name would be owned (and could be changed or pruned) by Argo CD: choose another "
            "name; to let a team run on Volcano's own 'default' queue, list \"default\" in its "
            "Team.queues instead",
        ),
    ),
    Case(
        id="cluster-unknown",
        stage="plan",
        edits=((RESNET, '"gpu-east", "rocm-west"]', '"gpu-east", "rocm-wset"]'),),
        file=RESNET,
        line='clusters=["gpu-east", "rocm-wset"],',
        obj="PyTorchJob 'resnet50-ddp'",
        field="clusters[1]",
        says=(
            "unknown cluster 'rocm-wset'; defined clusters: 'a800-north', 'gpu-east', 'h100-south', "
            "'rocm-west'",
        ),
    ),
    Case(
        id="cluster-not-allowed-for-the-team",
        stage="plan",
        edits=((RESNET, '"gpu-east", "rocm-west"]', '"gpu-east", "a800-north"]'),),
        file=RESNET,
        line='clusters=["gpu-east", "a800-north"],',
        obj="PyTorchJob 'resnet50-ddp'",
        field="clusters[1]",
        says=(
            "team 'vision' may not run on cluster 'a800-north' (Team.clusters in "
            "jobs/platform/teams.py allows 'gpu-east', 'rocm-west')",
        ),
    ),
    Case(
        id="gpu-above-the-cluster-per-node-count",
        stage="policy",
        edits=((RESNET, "gpu=8)", "gpu=12)"),),
        file=RESNET,
        line='resources=Resources(cpu=32, memory="256Gi", gpu=12),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="resources.gpu",
        says=(
            "12 exceeds the 8 GPUs per node of cluster 'gpu-east'",
            "12 exceeds the 8 GPUs per node of cluster 'rocm-west'",
        ),
        problems=2,  # one per cluster
    ),
    Case(
        id="team-unknown-queue",
        edits=((TEAMS, 'queues=["vision"]', 'queues=["vision", "nope"]'),),
        file=TEAMS,
        line='vision = Team(name="vision", queues=["vision", "nope"], clusters=["gpu-east", "rocm-west"])',
        obj="Team 'vision'",
        field="queues[1]",
        says=(
            "unknown queue 'nope'; defined queues (Volcano Queues and Kueue ClusterQueues): "
            "'h100-spare', 'llm', 'vision'",
        ),
    ),
    Case(
        id="network-profile-unknown",
        stage="plan",
        edits=((RESNET, "    nodes=2,", '    nodes=2,\n    network="infiniband",'),),
        file=RESNET,
        line='network="infiniband",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="network",
        says=(
            "unknown network profile 'infiniband'; defined network profiles: 'ib-multus', 'rdma', "
            "'rdma-dra' (declare NetworkProfile(name=...) in jobs/platform/)",
        ),
    ),
    # --- definitions: names -----------------------------------------------------------
    Case(
        id="job-name-duplicate",
        stage="plan",
        edits=(
            (
                RESNET,
                '    clusters=["gpu-east", "rocm-west"],\n)\n',
                '    clusters=["gpu-east", "rocm-west"],\n)\n\n'
                + A_JOB.format(var="again", name="resnet50-ddp").split("\n\n", 1)[1],
            ),
        ),
        file=RESNET,
        line=("again = PyTorchJob(", 'name="resnet50-ddp",'),
        obj="PyTorchJob 'resnet50-ddp'",
        field="name",
        says=(
            "another PyTorchJob named 'resnet50-ddp' runs in namespace 'vision' on cluster "
            "'gpu-east' (jobs/vision/resnet50_ddp.py:5); rename one",
        ),
        problems=2,  # one per cluster the two share
    ),
    Case(
        id="queue-name-duplicate",
        edits=((TEAMS, "\nvision = Team(", '\nagain = Queue(name="vision")\n\nvision = Team('),),
        file=TEAMS,
        line='again = Queue(name="vision")',
        obj="Queue 'vision'",
        field="name",
        says=("duplicate Queue name; first defined at jobs/platform/teams.py:5",),
    ),
    Case(
        id="trainjob-name-too-long-for-the-pod-hostname",
        stage="plan",
        edits=((RESNET_TJ, 'name="resnet50"', 'name="resnet50-' + "x" * 45 + '"'),),
        file=RESNET_TJ,
        line='name="resnet50-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",',
        obj="TrainJob 'resnet50-" + "x" * 45 + "'",
        field="name",
        says=(
            "is too long for run 1 on 2 nodes: the pod hostname",
            "would exceed 63 characters; shorten the name by 3 characters",
        ),
    ),
    Case(
        id="pytorchjob-name-too-long-for-the-service",
        stage="load",
        edits=((RESNET, 'name="resnet50-ddp"', 'name="resnet50-ddp-' + "x" * 42 + '"'),),
        file=RESNET,
        line="job = PyTorchJob(",
        obj="PyTorchJob 'resnet50-ddp-" + "x" * 42 + "'",
        field=None,  # a model check of the whole job: the field is in the message
        says=(
            "is too long for 2 nodes: the operator's Service",
            "would exceed 63 characters; shorten the name to 54 characters",
        ),
    ),
    # --- definitions: where things live ---------------------------------------------
    Case(
        id="job-file-in-the-platform-dir",
        stage="load",
        writes=(("jobs/platform/stray_job.py", A_JOB.format(var="stray", name="stray")),),
        file="jobs/platform/stray_job.py",
        line="stray = PyTorchJob(",
        obj="PyTorchJob 'stray'",
        field=None,
        says=(
            "jobs belong in jobs/<team>/, not in the platform directory; move it to its "
            "team's directory",
        ),
    ),
    Case(
        id="platform-object-in-a-team-dir",
        stage="load",
        writes=(
            (
                "jobs/vision/my_queue.py",
                'from trainkit import Queue\n\nmine = Queue(name="mine")\n',
            ),
        ),
        file="jobs/vision/my_queue.py",
        line='mine = Queue(name="mine")',
        obj="Queue 'mine'",
        field=None,
        says=("platform objects belong in jobs/platform/; move it there",),
    ),
    Case(
        id="team-dir-not-declared",
        stage="plan",
        writes=(("jobs/nlp/bert.py", A_JOB.format(var="bert", name="bert")),),
        file="jobs/nlp/bert.py",
        line="bert = PyTorchJob(",
        obj="PyTorchJob 'bert'",
        field=None,
        says=(
            "team 'nlp' (directory jobs/nlp/) is not declared; add Team(name='nlp', "
            "queues=[...]) to jobs/platform/; declared teams: 'llm', 'vision'",
        ),
    ),
    Case(
        # A team given the namespace of another team: its jobs would land there.
        id="team-namespace-of-another-team",
        edits=((TEAMS, 'namespace="llm-training"', 'namespace="vision"'),),
        file=TEAMS,
        line='namespace="vision",',
        obj="Team 'llm'",
        field="namespace",
        says=(
            "namespace 'vision' already belongs to team 'vision' (jobs/platform/teams.py:",
            "each team needs its own namespace",
        ),
    ),
    Case(
        # The directory gives the namespace; a job cannot choose another team's.
        id="job-namespace-field",
        stage="load",
        edits=((RESNET, 'queue="vision",', 'queue="vision",\n    namespace="llm-training",'),),
        file=RESNET,
        line='namespace="llm-training",',
        obj="PyTorchJob 'resnet50-ddp'",
        field="namespace",
        says=("unknown field",),
    ),
    Case(
        id="queue-parent-cycle",
        edits=(
            (TEAMS, "    weight=2,", '    weight=2,\n    parent="llm",'),
            (TEAMS, "    weight=4,", '    weight=4,\n    parent="vision",'),
        ),
        file=TEAMS,
        line='parent="llm",',
        obj="Queue 'vision'",
        field="parent",
        says=(
            "queue parents form a cycle: vision → llm → vision",
            "parent queue 'llm' does not exist on cluster(s) 'rocm-west'",
        ),
        problems=4,  # the cycle, twice, and each parent missing on one of the child's clusters
    ),
    # --- definitions: Python and files ------------------------------------------------
    Case(
        id="syntax-error",
        stage="load",
        edits=((RESNET, "    nodes=2,", "    nodes=2,,"),),
        file=RESNET,
        line="nodes=2,,",
        obj=None,
        field=None,
        says=("syntax error: invalid syntax",),
    ),
    Case(
        id="exception-in-a-definition-file",
        stage="load",
        edits=((RESNET, "\njob = PyTorchJob(", '\nEPOCHS = int("ten")\n\njob = PyTorchJob('),),
        file=RESNET,
        line='EPOCHS = int("ten")',
        obj=None,
        field=None,
        says=("ValueError while importing the definition: invalid literal for int()",),
    ),
    Case(
        id="script-file-missing",
        stage="load",
        edits=((RESNET, "scripts/train_resnet.py", "scripts/train_resnt.py"),),
        file=RESNET,
        line='script=Script.file("scripts/train_resnt.py"),',
        obj="PyTorchJob 'resnet50-ddp'",
        field="script.path",
        says=(
            "'scripts/train_resnt.py' not found next to the definition",
            "paths are relative to the definition file",
        ),
    ),
    Case(
        id="script-and-command-both-given",
        stage="load",
        edits=((RESNET, "    nodes=2,", '    command=["python", "train.py"],\n    nodes=2,'),),
        file=RESNET,
        line="job = PyTorchJob(",
        obj="PyTorchJob 'resnet50-ddp'",
        field=None,  # two fields at once: the message names both
        says=(
            "give script=Script.file('train.py') (shipped in a ConfigMap) or command=[...] "
            "(code inside the image), not both; with neither the image's ENTRYPOINT runs",
        ),
    ),
    # --- definitions: Trainer runtimes ------------------------------------------------
    Case(
        id="runtime-unknown",
        stage="plan",
        edits=((RESNET_TJ, 'runtime="torch-2-5"', 'runtime="torch-distributd"'),),
        file=RESNET_TJ,
        line='runtime="torch-distributd",',
        obj="TrainJob 'resnet50'",
        field="runtime",
        says=(
            "unknown runtime 'torch-distributd' on cluster 'gpu-east'; runtimes there: "
            "ClusterTrainingRuntime 'deepspeed-0-19', ClusterTrainingRuntime 'flux-jammy', "
            "ClusterTrainingRuntime 'jax-0-10', ClusterTrainingRuntime 'torch-2-5' "
            "(declare runtimes in jobs/platform/)",
        ),
        problems=2,  # one per cluster
    ),
    Case(
        id="runtime-of-another-team",
        edits=(
            (
                RUNTIMES,
                "# The LLM team's own runtime",
                'llm_east = TrainingRuntime(\n    name="llm-east",\n    team="llm",\n'
                '    image="registry.example.com/ml/pytorch:2.5.1-cuda12.4",\n'
                '    clusters=["gpu-east"],\n)\n\n'
                "# The LLM team's own runtime",
            ),
            (RESNET_TJ, 'runtime="torch-2-5"', 'runtime="llm-east"'),
            (RESNET_TJ, '["gpu-east", "rocm-west"]', '["gpu-east"]'),
        ),
        file=RESNET_TJ,
        line='runtime="llm-east",',
        obj="TrainJob 'resnet50'",
        field="runtime",
        says=(
            "TrainingRuntime 'llm-east' (team 'llm') belongs to another team; a TrainJob may "
            "use its own team's TrainingRuntimes and every ClusterTrainingRuntime",
        ),
    ),
    Case(
        id="runtime-not-on-the-job-cluster",
        stage="plan",
        edits=((SFT, 'clusters=["a800-north"]', 'clusters=["gpu-east"]'),),
        file=SFT,
        line='runtime="fsdp-a800",',
        obj="TrainJob 'llama-sft'",
        field="runtime",
        says=(
            "runtime 'fsdp-a800' does not exist on cluster 'gpu-east' (only on 'a800-north'); "
            "add the cluster to the runtime's clusters or choose other clusters",
        ),
    ),
    Case(
        id="trainingruntime-of-an-unknown-team",
        edits=((RUNTIMES, 'team="llm"', 'team="lm"'),),
        file=RUNTIMES,
        line='team="lm",',
        obj="TrainingRuntime 'fsdp-a800'",
        field="team",
        says=("unknown team 'lm'; declared teams: 'llm', 'vision'",),
        problems=2,  # and the llm TrainJob naming it no longer finds it
    ),
    # --- definitions: policy ------------------------------------------------------------
    Case(
        id="image-from-an-unlisted-registry",
        stage="policy",
        edits=(
            (
                RESNET,
                "registry.example.com/ml/pytorch:2.5.1-cuda12.4",
                "docker.io/pytorch/pytorch:2.5.1",
            ),
        ),
        file=RESNET,
        line="image={",
        obj="PyTorchJob 'resnet50-ddp'",
        field="image",
        says=(
            "image 'docker.io/pytorch/pytorch:2.5.1' is not from an allowed registry; "
            f"Policy.registries in {POLICY} allows 'registry.example.com/ml/'",
        ),
    ),
    Case(
        id="gpus-over-the-per-job-cap",
        stage="policy",
        edits=((RESNET, "    nodes=2,", "    nodes=9,"),),
        file=RESNET,
        line="nodes=9,",
        obj="PyTorchJob 'resnet50-ddp'",
        field="nodes",
        says=(
            f"72 GPUs (9 nodes × 8) exceed the per-job cap of 64; Policy.max_gpus_per_job in {POLICY}",
            "use fewer nodes or GPUs per node",
        ),
        # The cap, and the queue that could never admit 9 such nodes (on both clusters).
        problems=3,
    ),
    # --- MPIJob -------------------------------------------------------------------------
    Case(
        id="mpijob-on-a-cluster-without-mpi-operator",
        edits=((CLUSTERS, '"training-operator", "mpi-operator", "trainer"', '"trainer"'),),
        file=DEEPSPEED,
        line="clusters=",
        obj="MPIJob 'llama-pretrain-deepspeed'",
        field="clusters[0]",
        says=(
            "cluster 'a800-north' does not run mpi-operator, which MPIJobs need",
            f"Cluster.operators in {CLUSTERS} lists 'trainer'",
            "choose other clusters or add 'mpi-operator' there",
        ),
        # The PyTorchJobs on a800-north need the Training Operator, dropped by the same edit,
        # and the MPIJob pi (jobs/llm/pi_mpi.py) mpi-operator too.
        problems=5,
    ),
    Case(
        id="mpijob-sets-an-open-mpi-variable",
        stage="load",
        edits=((DEEPSPEED, '"NCCL_DEBUG": "WARN"', '"OMPI_MCA_btl": "tcp"'),),
        file=DEEPSPEED,
        line="env=",
        obj="MPIJob 'llama-pretrain-deepspeed'",
        field="env",
        says=(
            "OMPI_MCA_btl may not be set: Open MPI reads OMPI_* as mpirun settings",
            "launcher_args=['--mca', NAME, VALUE]",
        ),
    ),
    Case(
        id="mpijob-slots-do-not-divide-the-gpus",
        stage="load",
        edits=((DEEPSPEED, "    nodes=2,", "    nodes=2,\n    procs_per_node=3,"),),
        file=DEEPSPEED,
        line="job = MPIJob(",
        obj="MPIJob 'llama-pretrain-deepspeed'",
        field=None,
        says=("procs_per_node 3 does not divide the 8 GPUs of a worker",),
    ),
    Case(
        # A whole Secret would set whatever keys it holds: one exposing every GPU is refused.
        id="env-from-a-secret-holding-a-device-variable",
        edits=(
            (
                TEAMS,
                "    max_gpus=96,",
                '    secrets={"wandb": ["WANDB_API_KEY", "NVIDIA_VISIBLE_DEVICES"]},\n    max_gpus=96,',
            ),
            (DEEPSPEED, "from trainkit import", "from trainkit import SecretEnv,"),
            (DEEPSPEED, "    nodes=2,", '    nodes=2,\n    env_from=[SecretEnv(secret="wandb")],'),
        ),
        file=DEEPSPEED,
        line="env_from=",
        obj="MPIJob 'llama-pretrain-deepspeed'",
        field="env_from[0]",
        says=(
            "Secret 'wandb' holds key 'NVIDIA_VISIBLE_DEVICES'",
            "which env_from would make a variable that may not be set",
            "read the keys you need with env_refs instead",
        ),
    ),
    # --- TFJob --------------------------------------------------------------------------
    Case(
        id="tfjob-sets-tf-config",
        stage="load",
        edits=(
            (
                MOBILENET,
                '    args=["--epochs", "5"],',
                '    args=["--epochs", "5"],\n    env={"TF_CONFIG": "{}"},',
            ),
        ),
        file=MOBILENET,
        line="env=",
        obj="TFJob 'mobilenet-ps'",
        field="env",
        says=("TF_CONFIG may not be set: the Training Operator sets it to the job's cluster",),
    ),
    # --- PaddleJob ----------------------------------------------------------------------
    Case(
        id="paddlejob-ps-mode-without-servers",
        stage="load",
        edits=((PADDLE, "    nodes=2,", '    nodes=2,\n    mode="ps",'),),
        file=PADDLE,
        line="job = PaddleJob(",
        obj="PaddleJob 'resnet-paddle'",
        field=None,
        says=("mode='ps' needs parameter servers: add ps=Role(replicas=..., resources=...)",),
    ),
    Case(
        id="paddlejob-sets-the-rendezvous",
        stage="load",
        edits=((PADDLE, "    nodes=2,", '    nodes=2,\n    env={"PADDLE_MASTER": "x:1"},'),),
        file=PADDLE,
        line="env=",
        obj="PaddleJob 'resnet-paddle'",
        field="env",
        says=("PADDLE_MASTER may not be set: the Training Operator sets it to the rendezvous",),
    ),
    # --- RayJob -------------------------------------------------------------------------
    Case(
        id="rayjob-worker-min-above-max",
        stage="load",
        edits=((RAY, 'name="gpu", nodes=2,', 'name="gpu", nodes=2, min_nodes=3, max_nodes=2,'),),
        file=RAY,
        line="WorkerGroup(",
        obj="WorkerGroup 'gpu'",
        field=None,
        says=("min_nodes 3 is greater than max_nodes 2; KubeRay refuses the job",),
    ),
    Case(
        id="rayjob-autoscales-without-the-team-s-grant",
        stage="plan",
        edits=(
            (RAY, 'name="gpu", nodes=2,', 'name="gpu", nodes=2, max_nodes=4,'),
            (RAY, 'clusters=["gpu-east", "h100-south"]', 'clusters=["gpu-east"]'),
        ),
        file=RAY,
        line="workers=[",
        obj="RayJob 'lr-sweep-ray'",
        field="workers[0]",
        says=(
            "worker group 'gpu' autoscales (2..4 nodes), which runs the head (and the job's "
            "code) as KubeRay's autoscaler ServiceAccount",
            "team 'llm' is not granted ray_autoscaling (Team.ray_autoscaling in "
            "jobs/platform/teams.py is False): give each group equal min_nodes and max_nodes, "
            "or ask the platform team to set ray_autoscaling=True on the team",
        ),
    ),
    Case(
        id="rayjob-autoscales-on-kueue-though-the-team-is-granted",
        edits=(
            (RAY, 'name="gpu", nodes=2,', 'name="gpu", nodes=2, max_nodes=4,'),
            (TEAMS, "    max_gpus=96,", "    ray_autoscaling=True,\n    max_gpus=96,"),
        ),
        file=RAY,
        line="workers=[",
        obj="RayJob 'lr-sweep-ray'",
        field="workers",
        says=("on cluster 'h100-south' (Kueue): Kueue refuses RayJobs whose cluster autoscales",),
    ),
    Case(
        id="team-not-granted-the-network-profile",
        edits=((TEAMS, '    network_profiles=["rdma", "ib-multus", "rdma-dra"],', ""),),
        file="jobs/llm/llama_finetune_fsdp.py",
        line='network="rdma"',
        obj="PyTorchJob 'llama-finetune-fsdp'",
        field="network",
        says=(
            "team 'llm' may not use network profile 'rdma', which grants capabilities IPC_LOCK; "
            "resources rdma/hca; variables NCCL_IB_DISABLE (jobs/platform/policy.py); "
            "Team.network_profiles in jobs/platform/teams.py allows none: ask the platform team "
            "to add it there, or drop network= or name a granted one",
        ),
        # The MPIJob and the llm team's TrainingRuntime name it as well, and
        # llama-pretrain-ib and llama-pretrain-dra name the team's other profiles (and
        # llama-pretrain-ib asks for rdma/hca, which only the rdma profile lists).
        problems=6,
    ),
    Case(
        id="rayjob-deletes-itself",
        stage="load",
        edits=(
            (
                RAY,
                '    queue="llm",',
                '    deletion_rules=[DeletionRule(delete="self", when="succeeded")],\n    queue="llm",',
            ),
            (RAY, "from trainkit import RayJob,", "from trainkit import DeletionRule, RayJob,"),
        ),
        file=RAY,
        line="deletion_rules=",
        obj="DeletionRule",
        field=None,
        says=("delete='self' deletes the RayJob, which Argo CD's self-heal then creates again",),
    ),
    Case(
        id="rayjob-worker-gpus-over-the-node",
        stage="policy",
        edits=((RAY, 'memory="256Gi", gpu=8)', 'memory="256Gi", gpu=16)'),),
        file=RAY,
        line="workers=[",
        obj="RayJob 'lr-sweep-ray'",
        field="workers[0].resources.gpu",
        says=(
            "16 exceeds the 8 GPUs per node of cluster 'gpu-east'",
            "16 exceeds the 8 GPUs per node of cluster 'h100-south'",
        ),
        problems=2,  # one per cluster the job runs on
    ),
    Case(
        id="rayjob-fractional-cpu",
        stage="load",
        edits=(
            (
                RAY,
                'head=Resources(cpu=8, memory="32Gi")',
                'head=Resources(cpu="7500m", memory="32Gi")',
            ),
        ),
        file=RAY,
        line="job = RayJob(",
        obj="RayJob 'lr-sweep-ray'",
        field=None,
        says=("head has cpu '7500m': Ray schedules whole CPUs",),
    ),
    Case(
        id="rayjob-sets-ray-address",
        stage="load",
        edits=((RAY, '    queue="llm",', '    queue="llm",\n    env={"RAY_ADDRESS": "auto"},'),),
        file=RAY,
        line='    env={"RAY_ADDRESS"',
        obj="RayJob 'lr-sweep-ray'",
        field="env",
        says=("RAY_ADDRESS may not be set: KubeRay sets it to the head's GCS address",),
    ),
    # --- Kueue --------------------------------------------------------------------------
    Case(
        id="kueue-flavor-quota-below-a-job",
        edits=(
            (
                KUEUE,
                'quota=Capacity(cpu=128, memory="1Ti", gpu=16),\n'
                '            borrowing_limit=Capacity(cpu=256, memory="2Ti", gpu=32),',
                'quota=Capacity(cpu=128, memory="1Ti", gpu=8),\n'
                '            borrowing_limit=Capacity(cpu=256, memory="2Ti", gpu=0),',
            ),
        ),
        file=RAY,
        line="    queue=",
        obj="RayJob 'lr-sweep-ray'",
        field="queue",
        says=(
            "all its pods together need 16 nvidia.com/gpu in flavor 'h100' (at most 8) on "
            "cluster 'h100-south'",
            "Kueue would leave it pending forever",
        ),
    ),
    Case(
        id="kueue-cluster-given-a-volcano-queue",
        edits=(
            (
                TEAMS,
                'capability=Capacity(cpu=768, memory="6Ti", gpu=96),\n    clusters=["gpu-east", "a800-north"],',
                'capability=Capacity(cpu=768, memory="6Ti", gpu=96),\n    clusters=["gpu-east", "a800-north", "h100-south"],',
            ),
        ),
        file=TEAMS,
        line='    clusters=["gpu-east", "a800-north", "h100-south"],',
        obj="Queue 'llm'",
        field="clusters[2]",
        says=(
            "cluster 'h100-south' admits jobs through Kueue (scheduler='kueue'), which reads no Volcano Queue",
        ),
    ),
    Case(
        id="tfjob-with-two-chiefs",
        stage="load",
        edits=((MOBILENET, "    chief=Role(", "    chief=Role(replicas=2, "),),
        file=MOBILENET,
        line="job = TFJob(",
        obj="TFJob 'mobilenet-ps'",
        field=None,
        says=("chief.replicas is 2; a TFJob has one chief",),
    ),
    # --- roles with settings of their own ---------------------------------------------------
    Case(
        id="role-image-from-another-registry",
        stage="policy",
        edits=(
            (
                MOBILENET_ROLES,
                'image="registry.example.com/ml/tensorflow:2.18.0",  # the CPU build',
                'image="docker.io/tensorflow/tensorflow:2.18.0",  # the CPU build',
            ),
        ),
        file=MOBILENET_ROLES,
        line="    ps=Role(",
        obj="TFJob 'mobilenet-ps-roles'",
        field="ps.image",
        says=(
            "image 'docker.io/tensorflow/tensorflow:2.18.0' is not from an allowed registry",
            "Policy.registries in jobs/platform/policy.py allows 'registry.example.com/ml/'",
        ),
    ),
    Case(
        id="role-sets-a-variable-the-operator-sets",
        stage="load",
        edits=((MOBILENET_ROLES, '{"TF_NUM_INTEROP_THREADS": "8"}', '{"TF_CONFIG": "{}"}'),),
        file=MOBILENET_ROLES,
        line="job = TFJob(",
        obj="TFJob 'mobilenet-ps-roles'",
        field=None,
        says=("ps.env: TF_CONFIG may not be set: the Training Operator sets it",),
    ),
    Case(
        id="mpi-worker-resources-are-the-job-s",
        stage="load",
        edits=(
            (
                PI,
                '        restart_policy="Never",',
                '        resources=Resources(cpu=2, memory="1Gi"),',
            ),
        ),
        file=PI,
        line="job = MPIJob(",
        obj="MPIJob 'pi'",
        field=None,
        says=("worker.resources is the job's own: the workers run the job's settings",),
    ),
    Case(
        id="role-the-kind-does-not-have",
        stage="load",
        edits=((PI, "    worker=Role(", "    workers=Role("),),
        file=PI,
        line="    workers=Role(",
        obj="MPIJob 'pi'",
        field="workers",
        says=(
            "unknown field; an MPIJob's roles with settings of their own are launcher= "
            "(Launcher), worker= (Worker)",
        ),
    ),
    Case(
        id="gpus-over-the-per-team-cap",
        stage="policy",
        edits=((SFT, '    runtime="fsdp-a800",', '    runtime="fsdp-a800",\n    nodes=7,'),),
        file=TEAMS,
        line="max_gpus=96,",
        obj="Team 'llm'",
        field="max_gpus",
        says=(
            "the team's jobs on cluster 'a800-north' use 120 GPUs together but Team.max_gpus in "
            f"{TEAMS} allows 96",
            f"TrainJob 'llama-sft' 56 ({SFT}:5)",
            "lower the jobs' nodes or GPUs, or raise max_gpus",
        ),
    ),
    # --- definitions: a deployed TrainJob cannot change -----------------------------
    *(
        Case(
            id=f"trainjob-edited-in-place-{command}",
            edits=((RESNET_TJ, '"10"]', '"20"]'),),
            # No git in the workspace: what is on disk stands for what is deployed.
            command=(command, "--against", "disk"),
            file=RESNET_TJ,
            line="run=1,",
            obj="TrainJob 'resnet50'",
            field="run",
            says=(
                "TrainJob 'resnet50-r1' on clusters 'gpu-east', 'rocm-west' is deployed from "
                "generated/ on disk",
                "would change in place (spec.trainer.args), but a TrainJob cannot change once "
                "created (Argo CD's sync would fail: field is immutable); set run=2 to start the "
                "edited job as resnet50-r2 (Argo CD prunes 'resnet50-r1'), or revert the change",
            ),
            problems=1,  # one per job, naming its clusters
        )
        for command in ("synth", "check")
    ),
    Case(
        id="trainjob-script-edited",
        edits=(
            (RESNET_SCRIPT, '"""Distributed data-parallel', '"""Faster distributed data-parallel'),
        ),
        command=("synth", "--against", "disk"),
        file=RESNET_TJ,
        line="run=1,",
        obj="TrainJob 'resnet50'",
        field="run",
        says=(
            "would change in place (spec.runtimePatches; its script changed: train_resnet.py)",
            "set run=2 to start the edited job",
        ),
        # The TrainJob and the two PyTorchJobs sharing the script (resnet50-ddp,
        # resnet50-elastic), one message each (naming every cluster): the ConfigMap's name (its
        # hash) is part of each pod template.
        problems=3,
    ),
    # --- generated/ holding a file trainkit did not write -----------------------------
    Case(
        id="synth-refuses-a-stray-file-in-generated",
        writes=((f"{GEN}/vision/notes.yaml", "note: hand-written\n"),),
        file="generated/",
        line=None,
        obj=None,
        field=None,
        says=(
            "holds files trainkit did not generate (clusters/gpu-east/vision/notes.yaml); "
            "refusing to replace the directory",
        ),
    ),
    # --- hand-edited manifests: trainkit validate ------------------------------------
    validate(
        PYTORCHJOB_YAML,
        'nprocPerNode: "8"',
        'nprocsPerNode: "8"',
        id="validate-misspelt-nprocPerNode",
        line='nprocsPerNode: "8"',
        obj="PyTorchJob 'resnet50-ddp'",
        field="spec.nprocsPerNode",
        says=(
            "unknown field; the API server would drop it silently (did you mean 'nprocPerNode'?)",
        ),
    ),
    validate(
        TRAINJOB_YAML,
        "numNodes: 2",
        'numNodes: "2"',
        id="validate-numNodes-string",
        line='numNodes: "2"',
        obj="TrainJob 'resnet50-r1'",
        field="spec.trainer.numNodes",
        says=('expected integer, got string "2"',),
    ),
    validate(
        QUEUE_YAML,
        "weight: 2",
        "weight: two",
        id="validate-queue-weight-string",
        line="weight: two",
        obj="Queue 'vision'",
        field="spec.weight",
        says=('expected integer, got string "two"',),
    ),
    validate(
        RUNTIME_YAML,
        "                      ports:\n",
        "                      securityContext:\n"
        "                        privileged: true\n"
        "                      ports:\n",
        id="validate-privileged-container",
        line="privileged: true",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field=f"{RT_POD}.containers[0].securityContext.privileged",
        says=(
            "pod security: container 'node' is privileged, which is never allowed; remove privileged",
        ),
    ),
    validate(
        RUNTIME_YAML,
        "                  volumes:\n",
        "                  volumes:\n"
        "                    - hostPath:\n"
        "                        path: /var/run\n"
        "                      name: host\n",
        id="validate-hostPath-volume",
        line="- hostPath:",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field=f"{RT_POD}.volumes[0].hostPath",
        says=(
            "pod security: volume 'host' mounts a directory of the node (hostPath), which is "
            "never allowed without a Team.host_paths grant; use a PersistentVolumeClaim or an emptyDir",
        ),
    ),
    validate(
        RUNTIME_YAML,
        "                  schedulerName: volcano\n",
        "                  schedulerName: volcano\n                  hostNetwork: true\n",
        id="validate-hostNetwork",
        line="hostNetwork: true",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field=f"{RT_POD}.hostNetwork",
        says=(
            "pod security: the host network is not allowed",
            "ask the platform team for a NetworkProfile with host_network=True",
        ),
    ),
    validate(
        RUNTIME_YAML,
        "                      ports:\n",
        "                      securityContext:\n"
        "                        capabilities:\n"
        "                          add: [SYS_ADMIN]\n"
        "                      ports:\n",
        id="validate-capability-SYS_ADMIN",
        line="add: [SYS_ADMIN]",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field=f"{RT_POD}.containers[0].securityContext.capabilities.add[0]",
        says=("capability 'SYS_ADMIN' of container 'node' is not allowed; allowed: 'IPC_LOCK'",),
    ),
    validate(
        RUNTIME_YAML,
        "  name: torch-2-5\n",
        "  name: torch-2-5\n  namespace: vision\n",
        id="validate-namespace-on-a-ClusterTrainingRuntime",
        line="namespace: vision",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field="metadata.namespace",
        says=("ClusterTrainingRuntime is cluster-scoped; remove metadata.namespace",),
    ),
    validate(
        PYTORCHJOB_YAML,
        "  name: resnet50-ddp\n",
        "  name: ResNet50-DDP\n",
        id="validate-name-uppercase",
        line="name: ResNet50-DDP",
        obj="PyTorchJob 'ResNet50-DDP'",
        field="metadata.name",
        says=("'ResNet50-DDP' is invalid; it must be a DNS-1035 label: lowercase letters",),
    ),
    validate(
        TRAINJOB_YAML,
        "  name: resnet50-r1\n",
        "  name: 50resnet-r1\n",
        id="validate-trainjob-name-not-rfc1035",
        line="name: 50resnet-r1",
        obj="TrainJob '50resnet-r1'",
        field="metadata.name",
        says=("'50resnet-r1' is invalid; it must be a DNS-1035 label", "starting with a letter"),
        problems=1,  # the CRD's CEL rule on the root says the same; reported once
    ),
    validate(
        PYTORCHJOB_YAML,
        "    trainkit.dev/team: vision\n    trainkit.dev/job",
        "    trainkit.dev/team: vision team\n    trainkit.dev/job",
        id="validate-label-value-with-a-space",
        line="trainkit.dev/team: vision team",
        obj="PyTorchJob 'resnet50-ddp'",
        field='metadata.labels["trainkit.dev/team"]',
        says=("invalid label value 'vision team': at most 63 characters of letters, digits",),
    ),
    validate(
        RUNTIME_YAML,
        '                        limits:\n                          cpu: "16"\n'
        "                          memory: 128Gi",
        '                        limits:\n                          cpu: "16"\n'
        "                          memory: 12GG",
        id="validate-memory-12GG",
        line="memory: 12GG",
        obj="ClusterTrainingRuntime 'torch-2-5'",
        field=f"{RT_POD}.containers[0].resources.limits.memory",
        says=("invalid quantity '12GG': use a non-negative number with an optional suffix",),
    ),
    validate(
        TRAINJOB_YAML,
        "  runtimeRef:\n    apiGroup: trainer.kubeflow.org\n"
        "    kind: ClusterTrainingRuntime\n    name: torch-2-5\n",
        "",
        id="validate-trainjob-without-runtimeRef",
        line="spec:",
        obj="TrainJob 'resnet50-r1'",
        field="spec.runtimeRef",
        says=("required field is missing",),
    ),
    validate(
        TRAINJOB_YAML,
        "spec:\n  runtimeRef:",
        "spec:\n  managedBy: me\n  runtimeRef:",
        id="validate-trainjob-managedBy-cel-rule",
        line="managedBy: me",
        obj="TrainJob 'resnet50-r1'",
        field="spec.managedBy",
        says=(
            "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue",
        ),
    ),
    validate(
        PYTORCHJOB_YAML,
        "kind: PyTorchJob",
        "kind: PytorchJob",
        id="validate-kind-without-a-crd",
        line="apiVersion: kubeflow.org/v1",
        obj="PytorchJob 'resnet50-ddp'",
        field=None,
        says=("no CRD for kubeflow.org/v1 PytorchJob in", "pass --crds with your cluster's CRDs"),
    ),
    validate(
        TRAINJOB_YAML,
        "  numNodes: 2",
        "  numNodes: [2",
        id="validate-yaml-syntax-error",
        line="runtimePatches:",
        obj=None,
        field=None,
        says=("invalid YAML: while parsing a flow sequence",),
    ),
    Case(
        # Edited inside generated/ itself: validate reads it and writes nothing.
        id="validate-in-generated-misspelt-maxRestarts",
        stage="validate",
        edits=(
            (
                PYTORCHJOB_YAML,
                '  nprocPerNode: "8"\n',
                '  nprocPerNode: "8"\n  elasticPolicy:\n    maxRestart: 3\n',
            ),
        ),
        command=("validate", f"{GEN}/vision", "--crds", CRDS),
        file=PYTORCHJOB_YAML,
        line="maxRestart: 3",
        obj="PyTorchJob 'resnet50-ddp'",
        field="spec.elasticPolicy.maxRestart",
        says=(
            "unknown field; the API server would drop it silently (did you mean 'maxRestarts'?)",
        ),
    ),
    # --- hand-edited manifests: trainkit check ---------------------------------------
    Case(
        id="check-hand-edited-generated-file",
        edits=((PYTORCHJOB_YAML, "minAvailable: 2", "minAvailable: 1"),),
        command=("check", "--crds", CRDS),
        file=PYTORCHJOB_YAML,
        line=None,
        obj=None,
        field=None,
        says=("is out of date; run `trainkit synth` and commit the result",),
    ),
]


# The CRDs of the kinds trainkit renders, copied from the shared directory: reading all of
# it (12 MB of YAML) for every validate case would dominate this file's run time.
TRAINKIT_CRDS = (
    "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml",
    "trainer/trainer.kubeflow.org_trainingruntimes.yaml",
    "trainer/trainer.kubeflow.org_trainjobs.yaml",
    "training-operator/kubeflow.org_pytorchjobs.yaml",
    "training-operator/kubeflow.org_tfjobs.yaml",
    "training-operator/kubeflow.org_paddlejobs.yaml",
    "training-operator/kubeflow.org_xgboostjobs.yaml",
    "training-operator/kubeflow.org_jaxjobs.yaml",
    "paddle-operator/batch.paddlepaddle.org_paddlejobs.yaml",
    "mpi-operator/kubeflow.org_mpijobs.yaml",
    "kuberay/ray.io_rayjobs.yaml",
    "volcano/scheduling.volcano.sh_queues.yaml",
)


@pytest.fixture(scope="module")
def rendered_crds(crds: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("crds")
    for rel in TRAINKIT_CRDS:
        shutil.copyfile(crds / rel, directory / Path(rel).name)
    return directory


def edit(root: Path, rel: str, old: str, new: str) -> None:
    """Replace the file (a new one in its place, never written in place: see ``_broken``)."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} not once in {rel}"
    edited = path.with_name(f".{path.name}.edited")
    edited.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.replace(edited, path)


def _batches(cases: list[Case]) -> dict[str, list[Case]]:
    """The cases by the copy they break and the run they share: those of one ``stage`` in
    turn into the first batch none of whose files they touch; a case without one alone."""
    batches: dict[str, list[Case]] = {}
    for case in cases:
        if case.stage is None:
            batches[case.id] = [case]
            continue
        assert case.problems is not None, f"{case.id}: a batched case counts its problems"
        assert case.command[0] == "validate" or case.command == ("synth",), case.id
        k = 1
        while (name := f"{case.stage}-{k}") in batches and any(
            case.touched & other.touched for other in batches[name]
        ):
            k += 1
        batches.setdefault(name, []).append(case)
    return batches


BATCHES = _batches(CASES)
BATCH_OF = {case.id: name for name, cases in BATCHES.items() for case in cases}


def _command(cases: list[Case]) -> tuple[str, ...]:
    """The batch's command line: validate takes every case's paths."""
    if cases[0].stage == "validate":
        paths = [arg for case in cases for arg in case.command[1:] if arg not in ("--crds", CRDS)]
        return ("validate", *paths, "--crds", CRDS)
    (command,) = {case.command for case in cases}
    return command


@dataclass(frozen=True)
class Broken:
    """A copy of the examples with the breaks of a batch's cases, and the command's run."""

    root: Path
    cases: list[Case]
    run: Run
    before: dict[str, bytes]
    after: dict[str, bytes]


@pytest.fixture(scope="module")
def examples_generated(_examples_generated: Path) -> dict[str, bytes]:
    return Workspace(_examples_generated.parent).snapshot()


@pytest.fixture(scope="module")
def broken(
    tmp_path_factory: pytest.TempPathFactory,
    _examples_caches: RepoCaches,
    _examples_generated: Path,
    _session_cache: Path,
    examples_generated: dict[str, bytes],
    rendered_crds: Path,
) -> Callable[[str], Broken]:
    """The batch named NAME, broken and run once, by the first of its tests."""
    done: dict[str, Broken] = {}

    def get(name: str) -> Broken:
        if name not in done:
            done[name] = _broken(
                tmp_path_factory.mktemp("broken"),
                BATCHES[name],
                _examples_caches,
                _examples_generated,
                _session_cache,
                rendered_crds,
            )
            assert Workspace(_examples_generated.parent).snapshot() == examples_generated, (
                "the session's generated/ changed: a file linked into this batch's was "
                "written in place"
            )
        return done[name]

    return get


def _broken(
    root: Path,
    cases: list[Case],
    caches: RepoCaches,
    generated: Path,
    cache_home: Path,
    crds: Path,
) -> Broken:
    """``conftest.synthesized`` (a copy of the examples with the caches of their synth),
    with generated/ hard-linked to the session's instead of copied: on a slow file system,
    creating its files cost more than anything else in a case. A linked file written in
    place would change the session's: trainkit never does (it builds a new tree,
    ``write._build``), a case's ``edit`` replaces the file, a case's new file is new. The
    session's tree is compared after each batch (``broken``): a batch that changed it fails.
    """
    copy_tree(REPO / "jobs", root / "jobs")
    caches.seed(root)
    copy_tree(generated, root / "generated", link=True)
    ws = Workspace(root)
    # Copies first: a case that edits generated/ in place edits none of the others' copies.
    for case in cases:
        if case.copy:
            source, dest = case.copy
            (root / dest).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / source, root / dest)
    for case in cases:
        for rel, text in case.writes:
            ws.write(rel, text)
        for rel, old, new in case.edits:
            edit(root, rel, old, new)
    # Taken after the break: cases that hand-edit generated/ expect exactly that edit.
    before = ws.snapshot()
    args = [arg.replace(CRDS, str(crds)) for arg in _command(cases)]
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        # As a test's commands run (conftest: ``_not_in_ci``, ``_own_cache``).
        mp.delenv("CI", raising=False)
        mp.delenv("RUNNER_TEMP", raising=False)
        mp.setenv("TRAINKIT_CACHE_DIR", str(cache_home))
        mp.chdir(root)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    return Broken(root, cases, Run(code, out.getvalue(), err.getvalue()), before, ws.snapshot())


def _reported(case: Case, run: Run) -> tuple[str, list[str], str]:
    """The report the case's command prints, the lines of it that are the case's (those of
    its file), and the count line."""
    if case.command[0] == "validate":
        # The file on a line of its own, then its problems (indented) until the next file.
        sections: dict[str, list[str]] = {}
        current: list[str] = []
        for line in run.out.splitlines():
            if line.startswith("  "):
                current.append(line)
            else:
                current = sections.setdefault(line, [])
        problems = [line for line in sections.get(case.file, []) if not line.startswith("   ")]
        return run.out, problems, run.err
    errors = [line for line in run.err.splitlines() if line.startswith(f"error: {case.file}")]
    return run.err, errors, run.err.rstrip().rsplit("\n", 1)[-1]


def test_the_corpus_is_large_and_its_ids_unique():
    ids = [case.id for case in CASES]
    assert len(ids) >= 45
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    "case", [case for cases in BATCHES.values() for case in cases], ids=lambda case: case.id
)
def test_bad_input_is_reported_and_generated_is_untouched(broken, case):
    _assert_reported(case, broken(BATCH_OF[case.id]))


def _assert_reported(case: Case, batch: Broken) -> None:
    run = batch.run
    assert run.code == 1, (run.out, run.err)
    assert "Traceback" not in run.out + run.err
    report, mine, tail = _reported(case, run)
    noun = "problem(s)" if case.command[0] == "validate" else "error(s)"
    alone = len(batch.cases) == 1
    if case.command[0] == "validate":
        # The file heads its problems (a batch's report: the files in turn).
        assert report.startswith(f"{case.file}\n") or (not alone and f"\n{case.file}\n" in report)
    located = case.located(batch.root)
    lines = [line for line in mine if line.startswith(located)]
    assert lines, f"no line starts with {located!r}:\n{report}"
    for text in case.says:
        assert any(text in line for line in lines), f"{text!r} not in:\n{report}"
    if not alone:
        # Its own lines (its file's): the batch's count is the batch's test's.
        assert len(mine) == case.problems, report
    elif case.problems is None:
        assert tail.startswith(f"trainkit {case.command[0]}: "), tail
    else:
        assert tail.strip() == f"trainkit {case.command[0]}: {case.problems} {noun}", report
    assert batch.after == batch.before


@pytest.mark.parametrize("name", [name for name, cases in BATCHES.items() if len(cases) > 1])
def test_a_batch_reports_its_cases_and_nothing_else(broken, name):
    """The cases sharing a run report only their own problems: each line is one of theirs
    (of a file one of them breaks) and the count is their sum."""
    _assert_only_its_cases(broken(name))


def _assert_only_its_cases(batch: Broken) -> None:
    command = batch.cases[0].command[0]
    problems = [_reported(case, batch.run)[1] for case in batch.cases]
    if command == "validate":
        files = [line for line in batch.run.out.splitlines() if not line.startswith("  ")]
        assert sorted(files) == sorted(case.file for case in batch.cases), batch.run.out
        tail, noun = batch.run.err, "problem(s)"
    else:
        errors = [line for line in batch.run.err.splitlines() if line.startswith("error: ")]
        assert sorted(errors) == sorted(line for lines in problems for line in lines), batch.run.err
        tail, noun = batch.run.err.rstrip().rsplit("\n", 1)[-1], "error(s)"
    total = sum(case.problems or 0 for case in batch.cases)
    assert tail.strip() == f"trainkit {command}: {total} {noun}", batch.run.err
