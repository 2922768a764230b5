"""Where images come from (``Policy.registries``) and which accelerator stack they are built for."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..effective import EffectiveJob
from ..errors import Problem
from ..load import Definition
from ..model import ACCELERATORS, Cluster, RayJob, TrainJob
from ..model.job import image_for
from ..model.operator_job import OperatorJob
from ..model.rules import image_allowed, valid_reference
from ..model.trainer_flux import FLUX_DEFAULT_VIEW_IMAGE
from ..resolve import Index, PlannedRuntime, problem
from ..resolve.problems import known

__all__ = ["check_images", "tag_accelerator"]


def tag_accelerator(image: str) -> str | None:
    """The accelerator stack an image's tag names (``…:2.5.1-rocm6.2`` → ``rocm``), if one."""
    name = image.rsplit("/", 1)[-1].split("@", 1)[0]
    tag = name.partition(":")[2].lower()
    found = [a for a in ACCELERATORS if re.search(rf"(^|[^a-z]){a}", tag)]
    return found[0] if len(found) == 1 else None


def check_images(
    index: Index,
    jobs: Sequence[EffectiveJob],
    runtimes: Sequence[tuple[PlannedRuntime, dict[str, Any]]],
    problems: list[Problem],
) -> None:
    for pr, body in runtimes:
        # The runtime's own init containers and sidecars at their field, once each (they run
        # in every pod that trains); the rest (trainkit's wait-for-hosts) carry its image.
        mine = {ic.name: i for i, ic in enumerate(pr.runtime.init_containers)}
        seen: set[str] = set()
        for rjob in body["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = rjob["template"]["spec"]["template"]["spec"]
            for c in pod.get("containers") or []:
                _check(index, pr.definition, str(c.get("image", "")), pr.cluster, problems)
            for c in pod.get("initContainers") or []:
                name = str(c.get("name"))
                if name in mine and name not in seen:
                    seen.add(name)
                    at = f"init_containers[{mine[name]}].image"
                    _check(index, pr.definition, str(c.get("image", "")), pr.cluster, problems, at)
        if pr.runtime.flux is not None:
            # Trainer runs it as the flux-installer init container of every node (trainer
            # v2.3.0 plugins/flux/flux.go EnforceMLPolicy), its default when neither the runtime
            # nor the TrainJob names one (brokerDefaults).
            view = pr.runtime.flux.view_image or FLUX_DEFAULT_VIEW_IMAGE
            _check(index, pr.definition, view, pr.cluster, problems, "flux.view_image")
    for ej in jobs:
        pj = ej.planned
        if isinstance(pj.job, TrainJob) and pj.job.flux_view_image is not None:
            # The flux-installer's image (an added init container, not among the pods' images).
            cluster = pj.cluster
            job_view = image_for(pj.job.flux_view_image, cluster.name, cluster.accelerator)
            if job_view is not None:  # a missing key is the plan's problem
                _check(index, pj.definition, job_view, cluster, problems, "flux_view_image")
        # A role's own image is reported at the role's field (``ps.image``).
        own: dict[str, str] = {}
        if isinstance(pj.job, OperatorJob):
            own = {
                image: f"{field}.image"
                for field, role in reversed(pj.job.roles().items())
                if role.image is not None and (image := pj.role_image(role)) is not None
            }
        sub = getattr(pj.job, "submitter", None)
        if isinstance(pj.job, RayJob) and sub is not None and sub.image is not None:
            image = pj.role_image(sub)
            if image is not None:
                own[image] = "submitter.image"
        # A runtime's init containers and sidecars are reported at the runtime.
        theirs = {ic.name for ic in pj.runtime.runtime.init_containers} if pj.runtime else set()
        for ps in ej.pod_sets:
            for name, image in ps.images():
                if name in theirs:
                    continue
                # An image the job does not set is its runtime's, reported there.
                if pj.image is None and pj.runtime is not None:
                    continue
                field = own.get(image, "image") if image != pj.image else "image"
                _check(index, pj.definition, image, pj.cluster, problems, field)


def _check(
    index: Index,
    d: Definition,
    image: str,
    cluster: Cluster,
    problems: list[Problem],
    field: str = "image",
) -> None:
    rules = index.rules
    if not valid_reference(image):
        problems.append(
            problem(
                d,
                f"image {image!r} is not a valid image reference (registry/path:tag or "
                "@sha256:digest; path components are lowercase letters and digits joined by "
                "'.', '_' or '-', never '..'); write the image as the registry names it",
                field,
            )
        )
        return
    if not image_allowed(image, rules.registries):
        where = index.policy.file if index.policy else ""
        problems.append(
            problem(
                d,
                f"image {image!r} is not from an allowed registry; Policy.registries in "
                f"{where} allows {known(rules.registries)}; push the image there or ask "
                "the platform team to allow its registry",
                field,
            )
        )
    stack = tag_accelerator(image)
    if cluster.accelerator is not None and stack is not None and stack != cluster.accelerator:
        problems.append(
            problem(
                d,
                f"image {image!r} is built for {stack} but cluster {cluster.name!r} runs "
                f"{cluster.accelerator} (Cluster.accelerator in {index.cluster_file(cluster.name)}); "
                f"give one image per accelerator: image={{{cluster.accelerator!r}: '…', "
                f"{stack!r}: '…'}}",
                field,
            )
        )
