"""Kubeflow Trainer v2.3 objects: (Cluster)TrainingRuntime and TrainJob.

What the controller relies on (trainer v2.3.0 plugins): the replicated job
``node`` labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` with
a container ``node``; the Volcano queue as the annotation
``scheduling.volcano.sh/queue-name`` on the runtime template or a runtime
patch; ``schedulerName`` is not set by Trainer, so the runtime sets it.
"""

from __future__ import annotations

import copy
from typing import Any

from ..injected_env.kubeflow_trainer_env import TRAINER_MASTER_PORT
from ..model import (
    ClusterTrainingRuntime,
    NetworkProfile,
    Resources,
    RuntimeFlux,
    TrainingRuntime,
    TrainJob,
)
from ..model.job import WORKSPACE, image_for
from ..model.trainer import RuntimeMPI

# The Flux plugin's names and commands, for effective/ (which reads the model through here).
from ..model.trainer_flux import (
    FLUX_INSTALLER,
    FLUX_MOUNTS,
    FLUX_VOLUMES,
    flux_configmap,
    flux_curve_secret,
    flux_original_command,
    flux_run,
)
from ..model.trainer_initializers import (
    DATASET_INITIALIZER,
    INITIALIZER_VOLUME,
    MODEL_INITIALIZER,
    STORAGE_URI,
    DataSource,
    RuntimeInitializers,
)
from ..resolve import PlannedJob, PlannedRuntime
from .cluster_scoped import resource_requirements
from .init_specs import init_container_specs
from .meta import VOLCANO_QUEUE_ANNOTATION, metadata, pod_labels, pod_metadata
from .mpi_wait import wait_for_hosts
from .pod import (
    GPU_HIDING_ENV,
    container_security,
    env_list,
    env_only,
    env_sources,
    fabric_annotations,
    fabric_volumes,
    forwarded,
    hide_gpus,
    hides_gpus,
    job_ports,
    lifecycle,
    network_container,
    network_pod,
    one_per_node,
    placement,
    pod_access,
    pod_security,
    pod_settings,
    pod_volumes,
    probes,
    rsh_port_args,
    sshd_port,
    tolerations,
)
from .script import job_metadata, script_configmap_name

__all__ = [
    "API_VERSION",
    "DATASET_INITIALIZER",
    "FLUX_INSTALLER",
    "FLUX_MOUNTS",
    "FLUX_VOLUMES",
    "FRAMEWORK_LABEL",
    "INITIALIZER_VOLUME",
    "MODEL_INITIALIZER",
    "PATCH_MANAGER",
    "STORAGE_URI",
    "flux_configmap",
    "flux_curve_secret",
    "flux_original_command",
    "flux_run",
    "render_runtime",
    "render_trainjob",
    "runtime_framework",
]

API_VERSION = "trainer.kubeflow.org/v1alpha1"
GROUP = "trainer.kubeflow.org"
NODE = "node"  # the replicated job and the container Trainer writes spec.trainer into
LAUNCHER = "launcher"  # an MPI runtime's trainer job
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"  # the Kubeflow SDK lists runtimes by it
WEBHOOK_VALIDATION_LABEL = "trainer.kubeflow.org/webhook-validation"
# A runtime patch's manager must be a domain-prefixed path (Trainer's webhook).
PATCH_MANAGER = "trainkit.dev/synth"
# Where the MPI plugin mounts the hostfile (trainer v2.3.0 pkg/constants MPIHostfileDir,
# MPIHostfileName).
MPI_HOSTFILE = "/etc/mpi/hostfile"


def _runtime_pod(
    pr: PlannedRuntime,
    *,
    command: list[str] | None = None,
    resources: Resources | None = None,
    ports: bool = True,
    devices: bool = True,
    settings: dict[str, str] | None = None,
    training: bool = True,
) -> dict[str, Any]:
    """The pod of one replicated job: container ``node`` with the runtime's settings.
    ``resources`` replaces the runtime's; without ``devices`` the pod gets the network
    profile's env but none of its devices, capabilities or host network. A pod that runs
    the training gets the runtime's init containers, sidecars, ports, probes and hooks
    (``runtime_node``); one that does not (an MPI launcher running no ranks) gets none."""
    rt, cluster = pr.runtime, pr.cluster
    # TrainJobs inherit these: Trainer merges resourcesPerNode onto this container's
    # resources (v2.3), and a TrainJob may not change once created, so the profile
    # is never written into the TrainJob itself.
    profile = pr.network
    if not devices:
        profile = env_only(profile)
    container: dict[str, Any] = {"name": NODE, "image": rt.image}
    if rt.image_pull_policy is not None:
        container["imagePullPolicy"] = rt.image_pull_policy
    if command is not None:
        container["command"] = command
    if rt.env or rt.env_refs or settings:
        container["env"] = env_list(rt.env, rt.env_refs) + env_list(settings or {})
    if rt.env_from:
        container["envFrom"] = env_sources(rt.env_from)
    own_ports = [
        *([{"containerPort": TRAINER_MASTER_PORT, "protocol": "TCP"}] if ports else []),
        *(job_ports(rt, profile) if training else []),
    ]
    if own_ports:
        container["ports"] = own_ports
    res = resources if resources is not None else rt.resources
    if res is not None:
        container["resources"] = resource_requirements(res, cluster)
    network_container(container, profile)
    pod: dict[str, Any] = {"containers": [container]}
    identity = {"runAsUser": rt.run_as_user, "fsGroup": rt.fs_group}
    if any(v is not None for v in identity.values()):
        pod["securityContext"] = {k: v for k, v in identity.items() if v is not None}
    network_pod(pod, profile)
    volumes, mounts = pod_volumes(shm_size=rt.shm_size if devices else None)
    device_volumes, device_mounts = fabric_volumes(profile)
    volumes += device_volumes
    mounts += device_mounts
    if mounts:
        container["volumeMounts"] = mounts
        pod["volumes"] = volumes
    if training:
        _runtime_node(pod, pr, [*mounts, *_workspace_mounts(rt.initializers)])
    if rt.node_selector:
        pod["nodeSelector"] = dict(rt.node_selector)
    if rt.tolerations:
        pod["tolerations"] = tolerations(rt.tolerations)
    placement(pod, rt.node_affinity)
    # Trainer's Volcano plugin takes the PodGroup's priority from the pod template
    # (trainer v2.3.0 pkg/runtime/framework/plugins/volcano/volcano.go).
    pod_access(
        pod,
        service_account=rt.service_account,
        pull_secrets=rt.image_pull_secrets,
        priority_class=rt.priority_class,
    )
    if cluster.scheduler == "volcano":
        # Volcano must be the pods' scheduler, which Trainer does not set.
        pod["schedulerName"] = "volcano"
    return pod


def render_runtime(pr: PlannedRuntime) -> dict[str, Any]:
    rt, cluster = pr.runtime, pr.cluster
    spec: dict[str, Any]
    jobset: dict[str, Any]
    if rt.flux is not None:
        spec, jobset = _flux_runtime(pr, rt.flux)
    elif rt.mpi is None:
        # An empty policy object selects the plugin (trainer v2.3.0 plugins/{torch,jax,
        # xgboost}: EnforceMLPolicy acts when MLPolicySource.<framework> is set).
        spec = {"mlPolicy": {"numNodes": rt.nodes, rt.ml_policy: {}}}
        # A TrainJob's command replaces the runtime's (plugins/jobset/builder.go Trainer).
        node = _runtime_pod(pr, command=rt.command)
        jobset = {"replicatedJobs": [_replicated_job(NODE, node, trainer=True, network=pr.network)]}
    else:
        spec, jobset = _mpi_runtime(pr, rt.mpi)
    if rt.initializers is not None:
        _add_initializers(pr, rt.initializers, jobset)
    volcano = cluster.scheduler == "volcano"
    if volcano:
        # Trainer creates the PodGroup (all pods or none).
        spec["podGroupPolicy"] = {"volcano": {}}
    template: dict[str, Any] = {}
    if pr.queue is not None:
        template["metadata"] = {"annotations": {VOLCANO_QUEUE_ANNOTATION: pr.queue}}
    template["spec"] = jobset
    spec["template"] = template
    team = rt.team if isinstance(rt, TrainingRuntime) else None
    return {
        "apiVersion": API_VERSION,
        "kind": pr.kind,
        "metadata": metadata(
            name=rt.name,
            kind=pr.kind,
            source=pr.definition.file,
            namespace=pr.namespace,
            team=team,
            labels=_runtime_labels(rt),
        ),
        "spec": spec,
    }


def _runtime_labels(rt: TrainingRuntime | ClusterTrainingRuntime) -> dict[str, str]:
    labels = {FRAMEWORK_LABEL: runtime_framework(rt)}
    if not rt.webhook_validation:
        # The runtime webhooks' objectSelector skips it (trainer v2.3.0 manifests/base/webhook/
        # patch_validating.yaml, set on Trainer's own runtimes by manifests/overlays/runtimes);
        # they check only validateReplicatedJobs (pkg/webhooks/trainingruntime_webhook.go), which
        # every runtime trainkit renders satisfies (tests/test_trainer_webhook_label.py).
        labels[WEBHOOK_VALIDATION_LABEL] = "disabled"
    return labels


def runtime_framework(rt: TrainingRuntime | ClusterTrainingRuntime) -> str:
    """Trainer's ``framework`` label: the framework the runtime runs (the Kubeflow SDK lists
    runtimes by it and picks its trainer by it: kubeflow/sdk kubeflow/trainer/constants/
    constants.py RUNTIME_FRAMEWORK_LABEL; trainer v2.3.0 docs/operator-guides/runtime.md)."""
    return rt.framework_label


def _flux_runtime(pr: PlannedRuntime, flux: RuntimeFlux) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trainer v2.3.0 plugins/flux/flux.go: the policy's numProcPerNode is the tasks per node;
    the plugin reads its settings from container ``node``'s env (brokerSettingsFromEnvironment)
    and acts on the replicated job named ``node`` only. Nothing listens on Trainer's 29500."""
    settings = {} if flux.view_image is None else {"FLUX_VIEW_IMAGE": flux.view_image}
    if flux.network_device != "eth0":  # the plugin's default (constants.FluxNewtowkDevice)
        settings["FLUX_NETWORK_DEVICE"] = flux.network_device
    pod = _runtime_pod(pr, command=pr.runtime.command, ports=False, settings=settings)
    spec = {
        "mlPolicy": {"numNodes": pr.runtime.nodes, "flux": {"numProcPerNode": flux.procs_per_node}}
    }
    return spec, {"replicatedJobs": [_replicated_job(NODE, pod, trainer=True, network=pr.network)]}


def _workspace_mounts(steps: RuntimeInitializers | None) -> list[dict[str, Any]]:
    """Where the nodes mount the initializers' workspace: each step's sub-directory, or the
    whole volume, as Trainer v2.3.0's torchtune runtimes mount it (manifests/base/runtimes/
    torchtune/*/*.yaml), the steps' sub-directories in it."""
    if steps is None:
        return []
    if steps.mount_workspace:
        return [{"name": INITIALIZER_VOLUME, "mountPath": WORKSPACE}]
    return [
        {"name": INITIALIZER_VOLUME, "mountPath": f"{WORKSPACE}/{sub}", "subPath": sub}
        for step, sub in ((steps.dataset, "dataset"), (steps.model, "model"))
        if step is not None
    ]


def _runtime_node(pod: dict[str, Any], pr: PlannedRuntime, mounts: list[dict[str, Any]]) -> None:
    """The runtime's init containers and sidecars (which may mount ``mounts``, the node
    container's), probes and hooks on a pod that runs the training."""
    rt = pr.runtime
    container = pod["containers"][0]
    probes(container, rt)
    lifecycle(container, rt)
    if rt.init_containers:
        # A runtime has no container security context of its own (its pod's applies).
        # Ahead of the containers, as the API server lists them.
        rest = dict(pod)
        pod.clear()
        pod["initContainers"] = init_container_specs(
            rt.init_containers, image=rt.image, cluster=pr.cluster,
            pull_policy=rt.image_pull_policy, mounts=mounts, security=None,
        )  # fmt: skip
        pod.update(rest)


def _add_initializers(
    pr: PlannedRuntime, steps: RuntimeInitializers, jobset: dict[str, Any]
) -> None:
    """The initializer steps ahead of the node job (the shape of Trainer v2.3.0's torchtune
    runtimes, manifests/base/runtimes/torchtune): each step a replicated job labelled and named
    as the webhook requires (plugins/jobset/jobset.go Validate: container of the step's name
    mounting ``initializer``), the node job ``dependsOn`` each ``Complete``, and the claim
    ``initializer`` JobSet creates per TrainJob and adds to every pod mounting it
    (jobset v0.12.0 pkg/controllers/volume_claim_policy.go). The nodes mount the step's
    sub-directory only, so /workspace stays the image's (scripts are mounted into it)."""
    jobs = []
    for name, step in ((DATASET_INITIALIZER, steps.dataset), (MODEL_INITIALIZER, steps.model)):
        if step is None:
            continue
        env = ({STORAGE_URI: step.storage_uri} if step.storage_uri else {}) | dict(step.env)
        container: dict[str, Any] = {"name": name, "image": step.image}
        if pr.runtime.image_pull_policy is not None:
            container["imagePullPolicy"] = pr.runtime.image_pull_policy
        if env:
            container["env"] = env_list(env)
        container["resources"] = resource_requirements(step.resources, pr.cluster)
        container["volumeMounts"] = [{"name": INITIALIZER_VOLUME, "mountPath": WORKSPACE}]
        hide_gpus(container, pr.cluster)  # a step has no GPU: it sees none either
        pod: dict[str, Any] = {"containers": [container]}
        if pr.runtime.node_selector:
            pod["nodeSelector"] = dict(pr.runtime.node_selector)
        if pr.runtime.tolerations:
            pod["tolerations"] = tolerations(pr.runtime.tolerations)
        pod_access(
            pod,
            service_account=pr.runtime.service_account,
            pull_secrets=pr.runtime.image_pull_secrets,
            priority_class=pr.runtime.priority_class,
        )
        jobs.append(_replicated_job(name, pod, trainer=False, ancestor=name))
    node_mounts = _workspace_mounts(steps)
    for rjob in jobset["replicatedJobs"]:
        labels = (rjob["template"].get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR_LABEL) != "trainer":
            continue
        rjob["dependsOn"] = [{"name": j["name"], "status": "Complete"} for j in jobs]
        rjob_pod = rjob["template"]["spec"]["template"]["spec"]
        main = rjob_pod["containers"][0]
        main["volumeMounts"] = [*main.get("volumeMounts", []), *node_mounts]
        # dependsOn first in the replicated job, as JobSet's type lists it.
        rjob_copy = {"name": rjob["name"], "dependsOn": rjob.pop("dependsOn")}
        rjob_copy |= {k: v for k, v in rjob.items() if k != "name"}
        rjob.clear()
        rjob.update(rjob_copy)
    jobset["replicatedJobs"] = [*jobs, *jobset["replicatedJobs"]]
    claim: dict[str, Any] = {
        "accessModes": [steps.access_mode],
        "resources": {"requests": {"storage": steps.size}},
    }
    if steps.storage_class is not None:
        claim["storageClassName"] = steps.storage_class
    jobset["volumeClaimPolicies"] = [
        {"templates": [{"metadata": {"name": INITIALIZER_VOLUME}, "spec": claim}]}
    ]


def _replicated_job(
    name: str,
    pod: dict[str, Any],
    *,
    trainer: bool,
    count: int | None = None,
    depends_on: str | None = None,
    ancestor: str | None = None,
    network: NetworkProfile | None = None,
) -> dict[str, Any]:
    """A JobSet replicated job of ``pod``; ``network`` is the profile whose fabric the pod
    got (its Multus networks are the pod template's annotations)."""
    job_spec: dict[str, Any] = {}
    if count is not None:
        # Trainer sets the count of the trainer job only; another job keeps its parallelism.
        job_spec |= {"parallelism": count, "completions": count}
    annotations = fabric_annotations(network)
    job_spec["template"] = (
        {"metadata": {"annotations": annotations}, "spec": pod} if annotations else {"spec": pod}
    )
    template: dict[str, Any] = {}
    if trainer or ancestor is not None:
        template["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor or "trainer"}}
    template["spec"] = job_spec
    rjob: dict[str, Any] = {"name": name}
    if depends_on is not None:
        rjob["dependsOn"] = [{"name": depends_on, "status": "Ready"}]
    rjob["replicas"] = 1
    rjob["template"] = template
    return rjob


def _host_ssh_port(profile: NetworkProfile | None, mpi: RuntimeMPI) -> int | None:
    """The nodes' sshd port that trainkit must set itself: ``ssh_port`` on a host-network
    profile (the plan refuses 22 there); None leaves sshd and ssh to the image."""
    return mpi.ssh_port if profile is not None and profile.host_network else None


def _mpi_runtime(pr: PlannedRuntime, mpi: RuntimeMPI) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trainer v2.3.0 plugins/mpi/mpi.go: replicated job ``launcher`` (the trainer, where
    spec.trainer goes) and ``node`` (sshd, ``numNodes`` pods, or one less when the launcher
    is a node); the plugin writes the hostfile, the ssh keys and the OMPI_* variables."""
    rt, volcano = pr.runtime, pr.cluster.scheduler == "volcano"
    policy = {
        "numProcPerNode": mpi.procs_per_node,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": mpi.ssh_dir,
        "runLauncherAsNode": mpi.launcher_as_node,
    }
    nodes = max(rt.nodes - 1, 1) if mpi.launcher_as_node else rt.nodes
    port = _host_ssh_port(pr.network, mpi)
    # On the host network port 22 is the node's own sshd: the nodes' listens on ssh_port (-p
    # overrides the Port of the image's sshd_config), where the probe and mpirun look.
    sshd = [*mpi.sshd, "-p", str(port)] if port is not None else list(mpi.sshd)
    node = _runtime_pod(pr, command=sshd, ports=False)
    probe: dict[str, Any] = {"tcpSocket": {"port": mpi.ssh_port}}
    if mpi.probe_delay:
        # JobSet starts the launcher once the node job's pods are ready (dependsOn Ready,
        # jobset v0.12.0 pkg/controllers/depends_on.go), as Trainer v2.3.0's deepspeed and mlx
        # runtimes wait (manifests/base/runtimes/*_distributed.yaml: initialDelaySeconds 5).
        probe["initialDelaySeconds"] = mpi.probe_delay
    node["containers"][0]["readinessProbe"] = probe
    if port is not None:
        sshd_port(node["containers"][0], port)
    launcher = _runtime_pod(
        pr, ports=False, resources=None if mpi.launcher_as_node else mpi.launcher,
        devices=mpi.launcher_as_node, training=mpi.launcher_as_node,
    )  # fmt: skip
    if not mpi.launcher_as_node:
        # Resources the TrainJob cannot change (it may set them only with the launcher as a
        # node, Trainer merging them into both jobs): the GPU-less pods say so themselves.
        hide_gpus(node["containers"][0], pr.cluster)
        hide_gpus(launcher["containers"][0], pr.cluster)
    # A launcher that fails to reach a node restarts, counted against the Job's backoff.
    launcher["restartPolicy"] = "OnFailure"
    # Without a gang the launcher job waits for the nodes to be Ready (JobSet dependsOn, as
    # Kubeflow's deepspeed-distributed runtime does). With Volcano it may not: the PodGroup
    # counts every pod (plugins/volcano/volcano.go Build), so nodes waiting for a launcher
    # that waits for them would never be admitted. The launcher then waits itself, bounded,
    # for the hostfile's hosts to accept ssh (the MPI plugin's volumes: plugins/mpi/mpi.go).
    depends = None if volcano else NODE
    if volcano:
        launcher["initContainers"] = [
            wait_for_hosts(
                rt.image, hostfile_volume="mpi-hostfile", ssh_volume="mpi-ssh-auth",
                ssh_dir=mpi.ssh_dir, resources=launcher["containers"][0]["resources"],
                pull_policy=rt.image_pull_policy, port=port,
            ),
            *launcher.get("initContainers", []),  # the runtime's, on a launcher that is a node
        ]  # fmt: skip
    jobset = {
        # Hostnames resolve before the pods are ready, as mpirun needs (Kubeflow's
        # deepspeed-distributed runtime does the same).
        "network": {"publishNotReadyAddresses": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
        "replicatedJobs": [
            _replicated_job(NODE, node, trainer=False, count=nodes, network=pr.network),
            _replicated_job(
                LAUNCHER,
                launcher,
                trainer=True,
                depends_on=depends,
                network=pr.network if mpi.launcher_as_node else None,
            ),
        ],
    }
    # mlPolicy.numNodes is the launcher's count: Trainer sizes the job labelled as the trainer
    # ancestor from it (pkg/runtime/core/trainingruntime.go newRuntimeInfo), while the MPI
    # plugin sizes only `node`, from the TrainJob's numNodes (plugins/mpi/mpi.go). The
    # runtime's nodes are the node job's parallelism and what trainkit's TrainJobs default to.
    return {"mlPolicy": {"numNodes": 1, "mpi": policy}}, jobset


def _trainer(pj: PlannedJob, job: TrainJob) -> dict[str, Any]:
    """Only what the job itself says: the rest comes from the runtime, which
    Trainer snapshots when the TrainJob is created, so a later runtime edit
    never turns into an in-place change of a committed TrainJob.

    Written even when empty: the torch plugin injects the PET_* variables only
    when ``spec.trainer`` is present (pkg/runtime/framework/plugins/torch/torch.go).
    """
    trainer: dict[str, Any] = {}
    if pj.image is not None:
        trainer["image"] = pj.image
    mpi = pj.runtime.runtime.mpi if pj.runtime is not None else None
    flux = pj.runtime.runtime.flux if pj.runtime is not None else None
    framework = pj.runtime.runtime.ml_policy if pj.runtime is not None else "torch"
    if job.script is not None and mpi is not None:
        trainer["command"] = mpi_command(pj, job)
    elif job.script is not None and (framework != "torch" or flux is not None):
        # One process per node: the script reads the plugin's JAX_* or DMLC_* variables; on
        # a flux runtime the plugin runs it under `flux run`, one per task.
        trainer["command"] = ["python3", job.script.mount_path]
    elif job.script is not None:
        # torchrun takes nnodes, nproc_per_node, node_rank and the rendezvous
        # address from the PET_* variables Trainer injects.
        trainer["command"] = ["torchrun", job.script.mount_path]
    elif job.command is not None:
        trainer["command"] = list(job.command)
    if job.args:
        trainer["args"] = list(job.args)
    env = env_list(job.env, job.env_refs)
    view = (
        image_for(job.flux_view_image, pj.cluster.name, pj.cluster.accelerator)
        if flux is not None and job.flux_view_image is not None
        else None
    )
    if view is not None:
        # The Flux plugin reads FLUX_VIEW_IMAGE from the runtime's node container, then from
        # spec.trainer.env, which wins (trainer v2.3.0 plugins/flux/flux.go
        # brokerSettingsFromEnvironment), as Trainer's examples/flux/lammps-train-job.yaml sets it.
        env += env_list({"FLUX_VIEW_IMAGE": view})
    gpus = pj.resources.gpu if pj.resources is not None else 0
    if (mpi is None or mpi.launcher_as_node) and hides_gpus(pj.cluster, gpus):
        # The TrainJob decides its nodes' GPUs (resourcesPerNode), so it blanks the NVIDIA
        # variables itself when they have none; spec.trainer.env reaches the nodes (and the
        # launcher as a node: jobset/builder.go Trainer).
        env += env_list(GPU_HIDING_ENV)
    if env:
        trainer["env"] = env
    if job.nodes is not None or mpi is not None or flux is not None:
        # The MPI plugin sizes the node job from spec.trainer.numNodes only (plugins/mpi/
        # mpi.go EnforceMLPolicy), so an MPI TrainJob always says it; the Flux plugin
        # dereferences it (plugins/flux/flux.go generateFluxEntrypoint), a TrainJob without it
        # panicking the controller's reconcile.
        trainer["numNodes"] = pj.nodes
    res = pj.resources
    # Trainer's "auto" counts GPUs only for resource names holding "gpu"
    # (pkg/runtime/runtime.go GetNumGPUPerNode): with MIG or Gaudi names it would
    # start one process per CPU, so the number is written out there.
    odd_gpu = "gpu" not in pj.cluster.gpu_resource.lower() and res is not None and res.gpu > 0
    # Only the torch plugin reads numProcPerNode (jax and xgboost run one process per node).
    if flux is not None:
        # The Flux plugin's tasks per node: the TrainJob's, else the runtime's (flux.go).
        if job.procs_per_node is not None:
            trainer["numProcPerNode"] = job.procs_per_node
    elif framework == "torch" and (
        job.procs_per_node is not None or job.resources is not None or odd_gpu
    ):
        trainer["numProcPerNode"] = pj.trainer_procs()
    if job.resources is not None:
        # Trainer merges resourcesPerNode onto the runtime's container key by key
        # (pkg/runtime/core/trainingruntime.go, MergeResourceRequirements): a GPU key
        # left out would keep the runtime's GPUs, so it is always written, "0" included.
        trainer["resourcesPerNode"] = resource_requirements(job.resources, pj.cluster, gpu=True)
    return trainer


def mpi_slots(pj: PlannedJob) -> int:
    """Slots per host as Trainer's MPI plugin resolves them: the TrainJob's, else the
    runtime's, where 1 becomes the GPUs of a node (plugins/mpi/mpi.go EnforceMLPolicy)."""
    job, runtime = pj.job, pj.runtime
    if not isinstance(job, TrainJob) or runtime is None or runtime.runtime.mpi is None:
        raise TypeError("not a TrainJob on an MPI runtime")
    if job.procs_per_node is not None or job.resources is not None:
        return pj.trainer_procs()  # what spec.trainer.numProcPerNode then says
    slots = runtime.runtime.mpi.procs_per_node
    gpu = runtime.runtime.resources.gpu if runtime.runtime.resources else 0
    return gpu if slots == 1 and gpu > 1 else slots


def mpi_hosts(pj: PlannedJob) -> int:
    """Hosts of the hostfile: the node pods, and the launcher when it is a node."""
    runtime = pj.runtime
    if runtime is None or runtime.runtime.mpi is None:
        raise TypeError("not a TrainJob on an MPI runtime")
    if runtime.runtime.mpi.launcher_as_node:
        return max(pj.nodes - 1, 1) + 1
    return pj.nodes


def mpi_command(pj: PlannedJob, job: TrainJob) -> list[str]:
    """``mpirun`` for the TrainJob's script on the launcher: Trainer sets the hostfile
    through OMPI_*; the job's and the runtime's variables are forwarded to the ranks, which
    sshd starts without the pod's env."""
    if job.script is None or pj.runtime is None:
        raise TypeError("no script")
    rt = pj.runtime.runtime
    names = forwarded(
        [*rt.env, *rt.env_refs, *job.env, *job.env_refs, *pj.env_from_keys], pj.network
    )
    forward = [a for name in names for a in ("-x", name)]
    ranks = mpi_slots(pj) * mpi_hosts(pj)
    assert rt.mpi is not None
    rsh = rsh_port_args(_host_ssh_port(pj.network, rt.mpi))
    # The hostfile on the command line: Open MPI 5 ignores Trainer's
    # OMPI_MCA_orte_default_hostfile and would start every rank on the launcher.
    return [
        "mpirun", "--allow-run-as-root", "-np", str(ranks), "--hostfile", MPI_HOSTFILE,
        *rsh, *forward,
        "python3", job.script.mount_path,
    ]  # fmt: skip


def _runtime_patch(pj: PlannedJob, job: TrainJob) -> dict[str, Any]:
    """Queue, pod labels and volumes: what spec.trainer cannot say."""
    pod: dict[str, Any] = {}
    labels = pod_labels(pj.definition.team, job.name)
    cm = script_configmap_name(job.name, dict(pj.definition.files)) if job.script else None
    volumes, mounts = pod_volumes(
        configmap=cm, scripts=list(pj.definition.files), claims=job.volumes
    )
    node: dict[str, Any] = {"name": NODE}
    container_security(node, job)
    if mounts:
        node["volumeMounts"] = mounts
    if len(node) > 1:
        pod["containers"] = [node]
    if volumes:
        pod["volumes"] = volumes
    # A map: merged key by key into the runtime's (its run_as_user and fs_group stay unless
    # the job gives its own, which the plan refuses on an MPI runtime).
    pod_security(pod, job)
    pod_settings(pod, job)  # a TrainJob has no host_aliases (runtime patches take none)
    if job.node_selector:
        pod["nodeSelector"] = dict(job.node_selector)  # a map: merged key by key
    if job.tolerations and pj.runtime is not None:
        # PodSpec.tolerations has no merge key, so the patch's list replaces the runtime's
        # whole (trainer v2.3.0 pkg/runtime/core/trainingruntime.go merges runtime patches
        # as a strategic merge patch): the runtime's are written again ahead of the job's.
        base = pj.runtime.runtime.tolerations
        pod["tolerations"] = tolerations([*base, *(t for t in job.tolerations if t not in base)])
    if (job.node_affinity or job.topology) and pj.runtime is not None:
        # nodeSelectorTerms and preferred terms have no merge key: the patch's lists replace
        # the runtime's, so the runtime's rules are written again with the job's.
        rules = [*pj.runtime.runtime.node_affinity, *job.node_affinity] if job.node_affinity else []
        placement(pod, rules, job.topology, labels)
    # Both are fields of the patch's PodSpecPatch, immutable once the TrainJob exists
    # (trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go), as the whole job is here.
    pod_access(pod, service_account=job.service_account, pull_secrets=job.image_pull_secrets)
    # An MPI runtime's launcher and nodes both read the script and run on the job's nodes.
    mpi = pj.runtime is not None and pj.runtime.runtime.mpi is not None
    jobs: list[dict[str, Any]] = [
        {
            "name": name,
            # Copied, not shared, so YAML dumpers never emit anchors for it.
            "template": {
                "spec": {
                    "template": {
                        "metadata": pod_metadata(pj.definition.team, job.name, job),
                        "spec": copy.deepcopy(pod),
                    }
                }
            },
        }
        for name in ((NODE, LAUNCHER) if mpi else (NODE,))
    ]
    rt_mpi = pj.runtime.runtime.mpi if pj.runtime is not None else None
    if rt_mpi is not None and _host_ssh_port(pj.network, rt_mpi) is not None:
        # One node pod of this TrainJob per node: two would share the node's network
        # namespace and sshd's port (the plan keeps the launcher off the host network).
        # JobSet labels every pod with its JobSet's name, the TrainJob's, and its replicated
        # job's (jobset v0.12.0 api/jobset/v1alpha2/jobset_types.go JobSetNameKey,
        # ReplicatedJobNameKey; trainer v2.3.0 plugins/jobset/jobset.go Build names the JobSet).
        one_per_node(
            jobs[0]["template"]["spec"]["template"]["spec"],
            {"jobset.sigs.k8s.io/jobset-name": pj.object_name,
             "jobset.sigs.k8s.io/replicatedjob-name": NODE},
        )  # fmt: skip
    steps = pj.runtime.runtime.initializers if pj.runtime is not None else None
    for name, step in (
        (DATASET_INITIALIZER, steps.dataset if steps else None),
        (MODEL_INITIALIZER, steps.model if steps else None),
    ):
        if step is not None:
            # The steps' pods carry the job's labels too; nothing else (their env comes from
            # spec.initializer: Trainer's webhook refuses env in a patch, jobset.go Validate).
            meta = pod_metadata(pj.definition.team, job.name, job)
            jobs.insert(
                len(jobs) - (2 if mpi else 1),
                {"name": name, "template": {"spec": {"template": {"metadata": meta}}}},
            )
    # The patch's own metadata is the JobSet's: Trainer merges it over the runtime template's
    # (trainer v2.3.0 pkg/runtime/core/trainingruntime.go newRuntimeInfo, then plugins/jobset/
    # jobset.go Build WithLabels/WithAnnotations), and JobSet copies none of it to its Jobs or
    # pods (jobset v0.12.0 pkg/controllers/jobset_controller.go constructJob,
    # labelAndAnnotateObject: only the exclusive-placement annotations).
    jobset_meta: dict[str, Any] = {}
    if job.jobset_labels:
        jobset_meta["labels"] = dict(job.jobset_labels)
    annotations = dict(job.jobset_annotations)
    if pj.queue is not None:
        annotations[VOLCANO_QUEUE_ANNOTATION] = pj.queue
    if annotations:
        jobset_meta["annotations"] = annotations
    template: dict[str, Any] = {}
    if jobset_meta:
        template["metadata"] = jobset_meta
    template["spec"] = {"replicatedJobs": jobs}
    return {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": template}}


def _source(source: DataSource) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if source.storage_uri is not None:
        out["storageUri"] = source.storage_uri
    if source.env:
        out["env"] = env_list(source.env)
    if source.secret is not None:
        out["secretRef"] = {"name": source.secret}
    return out


def render_trainjob(pj: PlannedJob) -> dict[str, Any]:
    job, runtime = pj.job, pj.runtime
    if not isinstance(job, TrainJob) or runtime is None:
        raise TypeError(f"not a planned TrainJob: {pj.kind}")
    spec: dict[str, Any] = {
        # Written in full: the CRD defaults apiGroup and kind, and a default the
        # API server fills in is a difference Argo CD would show.
        "runtimeRef": {"apiGroup": GROUP, "kind": runtime.kind, "name": runtime.runtime.name},
    }
    initializer = {
        key: _source(source)
        for key, source in (("dataset", job.dataset), ("model", job.model))
        if source is not None
    }
    if initializer:
        # Trainer's builder writes these into the runtime's steps (plugins/jobset/builder.go
        # Initializer); the CRD keeps the section immutable, as the whole TrainJob is here.
        spec["initializer"] = initializer
    spec["trainer"] = _trainer(pj, job)
    spec["runtimePatches"] = [_runtime_patch(pj, job)]
    if job.deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.deadline_seconds
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": job_metadata(pj, "TrainJob"),
        "spec": spec,
    }
