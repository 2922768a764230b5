"""Kubeflow Trainer v2.3's initializer steps: a runtime's ``dataset-initializer`` and
``model-initializer`` replicated jobs, the shared volume they fill (JobSet
``volumeClaimPolicies``), and what a TrainJob's ``initializer`` section gives them.

Sources: kubeflow/trainer v2.3.0 pkg/constants/constants.go (the job, container and label
names, ``/workspace/dataset`` and ``/workspace/model``), pkg/runtime/framework/plugins/jobset/
builder.go Initializer (``STORAGE_URI``, the env upserted, ``envFrom.secretRef``), plugins/jobset/
jobset.go Validate (a TrainJob's dataset or model needs the runtime's job, container and mount
``initializer``), manifests/base/runtimes/torchtune (the node job ``dependsOn`` both,
``Complete``); kubernetes-sigs/jobset v0.12.0 pkg/controllers/volume_claim_policy.go (the claim
``initializer-<jobset>`` added to every pod mounting ``initializer``) and
pkg/webhooks/jobset_webhook.go validateVolumeClaimPolicies (that name at most 63 characters).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import TrainkitModel
from .fields import EnvName, EnvValue, MemoryQuantity, ObjectName
from .job import Resources

__all__ = [
    "DATASET_INITIALIZER",
    "INITIALIZER_VOLUME",
    "MODEL_INITIALIZER",
    "STORAGE_URI",
    "DataSource",
    "Initializer",
    "RuntimeInitializers",
    "initializer_claim",
]

DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
INITIALIZER_VOLUME = "initializer"
"""The volume (and volumeClaimPolicies template) the initializers write into."""
STORAGE_URI = "STORAGE_URI"
_URI = r"^[A-Za-z][A-Za-z0-9+.-]*://.+$"  # the TrainJob CRD's CEL rule on storageUri


def initializer_claim(trainjob: str) -> str:
    """The PVC JobSet creates for the TrainJob's workspace (GeneratePVCName)."""
    return f"{INITIALIZER_VOLUME}-{trainjob}"


def _no_storage_uri(env: dict[str, str]) -> dict[str, str]:
    if STORAGE_URI in env:
        raise ValueError(
            "STORAGE_URI may not be set in env: Trainer sets it from storage_uri; give "
            "storage_uri instead"
        )
    return env


class Initializer(TrainkitModel):
    """One initializer step of a runtime: a container that downloads a dataset or a model into
    the workspace before the nodes start (Kubeflow's ``ghcr.io/kubeflow/trainer/
    dataset-initializer`` and ``model-initializer`` images read ``STORAGE_URI``)."""

    image: str = Field(min_length=1, pattern=r"^\S+$")
    """Image of the step, e.g. ``registry.example.com/ml/dataset-initializer:v2.3.0``."""
    storage_uri: str | None = Field(default=None, max_length=2048, pattern=_URI)
    """Default source (``STORAGE_URI``), e.g. ``hf://tatsu-lab/alpaca``; a TrainJob's
    ``dataset``/``model`` replaces it."""
    env: dict[EnvName, EnvValue] = {}
    """Environment of the step, e.g. ``{"IGNORE_PATTERNS": "*.bin"}``."""
    resources: Resources = Resources(cpu="2", memory="8Gi")
    """CPU and memory of the step's pod (no GPUs: it only downloads)."""

    @field_validator("env")
    @classmethod
    def _env_ok(cls, env: dict[str, str]) -> dict[str, str]:
        return _no_storage_uri(env)

    @field_validator("resources")
    @classmethod
    def _no_gpus(cls, res: Resources) -> Resources:
        if res.gpu:
            raise ValueError("an initializer downloads and needs no GPU: set gpu=0")
        return res


class RuntimeInitializers(TrainkitModel):
    """The steps that run before a runtime's nodes, and the volume they fill: the dataset lands
    in ``/workspace/dataset`` and the model in ``/workspace/model`` of every node."""

    dataset: Initializer | None = None
    """The ``dataset-initializer`` step."""
    model: Initializer | None = None
    """The ``model-initializer`` step."""
    size: MemoryQuantity
    """Size of the workspace volume every TrainJob gets (a PVC per TrainJob, deleted with it),
    e.g. ``"200Gi"``."""
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = "ReadWriteMany"
    """``ReadWriteMany`` lets nodes on several machines read it; ``ReadWriteOnce`` only fits
    TrainJobs of one node."""
    storage_class: ObjectName | None = None
    """StorageClass of the volume; default: the cluster's default class."""
    mount_workspace: bool = False
    """``True`` mounts the whole volume at ``/workspace`` of every node, as Trainer's torchtune
    runtimes do: what the nodes write under ``/workspace`` (a fine-tune's
    ``output_dir=/workspace/output``) lands on the volume instead of the container's disk, and
    the image's own ``/workspace`` is hidden (scripts are still mounted into it). ``False``
    mounts only ``/workspace/dataset`` and ``/workspace/model``."""

    @model_validator(mode="after")
    def _a_step(self) -> RuntimeInitializers:
        if self.dataset is None and self.model is None:
            raise ValueError("give dataset=Initializer(...), model=Initializer(...) or both")
        return self


class DataSource(TrainkitModel):
    """What a TrainJob's initializer step downloads (``spec.initializer.dataset`` or
    ``.model``)."""

    storage_uri: str | None = Field(default=None, max_length=2048, pattern=_URI)
    """Where from, e.g. ``hf://meta-llama/Llama-3.2-1B-Instruct`` or ``s3://bucket/path``;
    default: the runtime step's."""
    env: dict[EnvName, EnvValue] = {}
    """Settings of the step's image, e.g. ``{"IGNORE_PATTERNS": "*.msgpack"}``, upserted
    over the runtime's."""
    secret: ObjectName | None = None
    """A Secret of the job's namespace whose every key becomes a variable of the step
    (``secretRef``), e.g. an ``ACCESS_TOKEN``; the Team lists it in ``secrets`` with its keys."""

    @field_validator("env")
    @classmethod
    def _env_ok(cls, env: dict[str, str]) -> dict[str, str]:
        return _no_storage_uri(env)
