"""What the operators inject into training containers, in one place.

The manifest renderers refuse these names in user env (the operator would
override them or duplicate them), and the rehearsal computes the same values
for a local run, so both read the contract from here.
"""

from __future__ import annotations

import json

__all__ = [
    "DEVICE_ENV",
    "JAXJOB_PORT",
    "MPI_HOSTFILE",
    "PADDLEJOB_PORT",
    "PYTORCHJOB_MASTER_PORT",
    "RAY_GCS_PORT",
    "RESERVED_ENV",
    "RESERVED_ENV_PREFIXES",
    "TFJOB_PORT",
    "TRAINER_FRAMEWORK_ENV",
    "TRAINER_MASTER_PORT",
    "TRAINJOB_RESERVED_ENV",
    "XGBOOSTJOB_PORT",
    "jaxjob_env",
    "mpijob_env",
    "mpijob_reserved_env_reason",
    "paddle_operator_env",
    "paddlejob_env",
    "pytorchjob_elastic_env",
    "pytorchjob_env",
    "rayjob_env",
    "refused_env_reason",
    "reserved_env_reason",
    "tf_config",
    "trainer_framework_env",
    "trainjob_env",
    "trainjob_reserved_env_reason",
    "xgboostjob_env",
]

# training-operator v1.9 default port (name "pytorchjob-port") on container "pytorch".
PYTORCHJOB_MASTER_PORT = 23456

RESERVED_ENV: dict[str, str] = {
    "MASTER_ADDR": "the Training Operator sets it to the Master pod's service",
    "MASTER_PORT": "the Training Operator sets it to the Master's pytorchjob-port",
    "WORLD_SIZE": "the Training Operator sets it to nodes × procs_per_node",
    "RANK": "the Training Operator sets it to the node rank",
    "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
    "LOCAL_RANK": "torchrun sets it for every process it starts",
    "LOCAL_WORLD_SIZE": "torchrun sets it for every process it starts",
    "GROUP_RANK": "torchrun sets it for every process it starts",
}

RESERVED_ENV_PREFIXES: dict[str, str] = {
    "PET_": "PET_* variables are torchrun's settings, injected by the operator from "
    "nodes and procs_per_node",
}


# Read by the container runtime when it creates the container, not by the
# training code: set by a job, they would expose GPUs the device plugin did not
# assign to the pod (NVIDIA_VISIBLE_DEVICES=all), or change driver features.
# nvidia-container-toolkit reads every NVIDIA_* variable of the image and pod
# (internal/config/image/cuda_image.go); the AMD and Habana runtimes theirs.
_DEVICE_RUNTIME = (
    "the container runtime reads it when it creates the container and would expose "
    "devices the scheduler did not assign to the pod; GPUs come from resources.gpu"
)
DEVICE_ENV: dict[str, str] = {
    "AMD_VISIBLE_DEVICES": _DEVICE_RUNTIME,
    "HABANA_VISIBLE_DEVICES": _DEVICE_RUNTIME,
    "HABANA_VISIBLE_MODULES": _DEVICE_RUNTIME,
    "ROCR_VISIBLE_DEVICES": "it selects the AMD GPUs of the node the ROCm runtime uses; "
    "the device plugin assigns them (resources.gpu)",
    "HIP_VISIBLE_DEVICES": "it selects the AMD GPUs of the node HIP uses; the device plugin "
    "assigns them (resources.gpu)",
    "GPU_DEVICE_ORDINAL": "it selects the AMD GPUs of the node the runtime uses; the device "
    "plugin assigns them (resources.gpu)",
    "CUDA_VISIBLE_DEVICES": "the device plugin assigns the GPUs of each pod (resources.gpu); "
    "procs_per_node decides how many processes use them",
}
_DEVICE_PREFIXES = {"NVIDIA_": _DEVICE_RUNTIME}


def refused_env_reason(name: str, kind: str) -> str | None:
    """Why a definition of ``kind`` (``PyTorchJob``, ``TrainJob``, a runtime) may not set
    ``name``: the operator or torchrun sets it, or it changes the pod's hardware."""
    if name in DEVICE_ENV:
        return DEVICE_ENV[name]
    for prefix, reason in _DEVICE_PREFIXES.items():
        if name.startswith(prefix):
            return reason
    if kind == "PyTorchJob":
        return reserved_env_reason(name)
    if kind == "MPIJob":
        return mpijob_reserved_env_reason(name)
    if kind == "TFJob":
        return _TFJOB_RESERVED.get(name)
    if kind == "PaddleJob":
        return _PADDLEJOB_RESERVED.get(name)
    if kind == "RayJob":
        return _RAYJOB_RESERVED.get(name)
    if kind == "XGBoostJob":
        return _XGBOOSTJOB_RESERVED.get(name)
    if kind == "JAXJob":
        return _JAXJOB_RESERVED.get(name)
    return trainjob_reserved_env_reason(name)


def reserved_env_reason(name: str) -> str | None:
    """Why ``name`` may not be set by a user, or None when it may."""
    if name in RESERVED_ENV:
        return RESERVED_ENV[name]
    for prefix, reason in RESERVED_ENV_PREFIXES.items():
        if name.startswith(prefix):
            return reason
    return None


def pytorchjob_env(
    *,
    job_name: str,
    nodes: int,
    procs_per_node: int,
    node_rank: int,
    master_addr: str | None = None,
    master_port: int = PYTORCHJOB_MASTER_PORT,
) -> dict[str, str]:
    """The env Training Operator v1.9 gives the container ``pytorch`` of one node.

    Node 0 is the Master, nodes 1..n-1 are Worker i-1 (``RANK`` = node rank).
    ``master_addr`` defaults to the Master's service name ``<job>-master-0``.
    """
    addr = master_addr if master_addr is not None else f"{job_name}-master-0"
    return {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": addr,
        "PET_MASTER_ADDR": addr,
        "MASTER_PORT": str(master_port),
        "PET_MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(nodes * procs_per_node),
        "RANK": str(node_rank),
        "PET_NODE_RANK": str(node_rank),
        "PET_NPROC_PER_NODE": str(procs_per_node),
        "PET_NNODES": str(nodes),
    }


def pytorchjob_elastic_env(
    *,
    job_name: str,
    min_nodes: int,
    max_nodes: int,
    max_restarts: int | None,
    procs_per_node: str | None,
    port: int = PYTORCHJOB_MASTER_PORT,
    host: str | None = None,
    rdzv_id: str | None = None,
    rdzv_conf: list[tuple[str, str]] | None = None,
    standalone: bool = False,
    backend: str = "c10d",
) -> dict[str, str]:
    """The env Training Operator v1.9 gives every Worker of an elastic PyTorchJob.

    With no Master there is no MASTER_ADDR, RANK or WORLD_SIZE: torchrun takes its settings
    from PET_* and the rendezvous assigns ranks (pkg/controller.v1/pytorch/envvar.go setPodEnv;
    pkg/controller.v1/pytorch/elastic.go: the endpoint is ``rdzvHost`` else the first Worker's
    Service, at ``rdzvPort`` else its pytorchjob-port; PET_NNODES is ``min:max``).
    """
    env = {"PYTHONUNBUFFERED": "1"}
    if procs_per_node is not None:
        env["PET_NPROC_PER_NODE"] = procs_per_node
    env.update(
        {
            "PET_RDZV_ENDPOINT": f"{host or f'{job_name}-worker-0'}:{port}",
            "PET_RDZV_BACKEND": backend,
            "PET_NNODES": f"{min_nodes}:{max_nodes}",
        }
    )
    if max_restarts is not None:
        env["PET_MAX_RESTARTS"] = str(max_restarts)
    if rdzv_id is not None:
        env["PET_RDZV_ID"] = rdzv_id
    if rdzv_conf:
        env["PET_RDZV_CONF"] = ",".join(f"{k}={v}" for k, v in rdzv_conf)
    if standalone:
        env["PET_STANDALONE"] = ""
    return env


# Kubeflow Trainer v2.3 torch plugin: port 29500 on container "node" of the
# replicated job "node"; the webhook rejects these names in spec.trainer.env.
TRAINER_MASTER_PORT = 29500

TRAINJOB_RESERVED_ENV: dict[str, str] = {
    "PET_NNODES": "Kubeflow Trainer's torch plugin sets it from nodes",
    "PET_NPROC_PER_NODE": "Kubeflow Trainer's torch plugin sets it from procs_per_node",
    "PET_NODE_RANK": "Kubeflow Trainer's torch plugin sets it to the pod's completion index",
    "PET_MASTER_ADDR": "Kubeflow Trainer's torch plugin sets it to the first node's address",
    "PET_MASTER_PORT": "Kubeflow Trainer's torch plugin sets it to 29500",
    "MASTER_ADDR": "torchrun sets it for every process it starts",
    "MASTER_PORT": "torchrun sets it for every process it starts",
    "WORLD_SIZE": "torchrun sets it to nodes × procs_per_node",
    "RANK": "torchrun sets it for every process it starts",
    "LOCAL_RANK": "torchrun sets it for every process it starts",
    "LOCAL_WORLD_SIZE": "torchrun sets it for every process it starts",
    "GROUP_RANK": "torchrun sets it for every process it starts",
}


# Kubeflow Trainer v2.3.0 plugins/jax/jax.go and plugins/xgboost/xgboost.go EnforceMLPolicy:
# on container "node" of the trainer job, when spec.trainer is set; the XGBoost names are
# refused by its webhook (pkg/constants/constants.go XGBoostReservedEnvNames), the JAX ones
# would be overwritten (apply.UpsertEnvVars).
_TRAINER_JAX = "Kubeflow Trainer's JAX plugin sets it on a jax runtime's nodes"
_TRAINER_XGB = "Kubeflow Trainer's XGBoost plugin sets it on an xgboost runtime's nodes"
TRAINER_FRAMEWORK_ENV: dict[str, str] = {
    "JAX_NUM_PROCESSES": f"{_TRAINER_JAX} to the number of nodes",
    "JAX_PROCESS_ID": f"{_TRAINER_JAX} to the pod's completion index",
    "JAX_COORDINATOR_ADDRESS": f"{_TRAINER_JAX} to the first node's address",
    "DMLC_TRACKER_URI": f"{_TRAINER_XGB} to the first node's address",
    "DMLC_TRACKER_PORT": f"{_TRAINER_XGB} to 29500",
    "DMLC_TASK_ID": f"{_TRAINER_XGB} to the pod's completion index",
    "DMLC_NUM_WORKER": f"{_TRAINER_XGB} to nodes × GPUs per node (or nodes)",
}


def trainer_framework_env(
    *, framework: str, trainjob: str, nodes: int, gpus: int
) -> dict[str, str]:
    """What Trainer's jax or xgboost plugin gives container ``node`` of the first pod (the
    completion index is 0 there); empty for torch. ``gpus`` is each node's GPU count."""
    first = f"{trainjob}-node-0-0.{trainjob}"
    if framework == "jax":
        return {
            "JAX_NUM_PROCESSES": str(nodes),
            "JAX_PROCESS_ID": "0",
            "JAX_COORDINATOR_ADDRESS": f"{first}:{TRAINER_MASTER_PORT}",
        }
    if framework == "xgboost":
        return {
            "DMLC_TRACKER_URI": first,
            "DMLC_TRACKER_PORT": str(TRAINER_MASTER_PORT),
            "DMLC_TASK_ID": "0",
            "DMLC_NUM_WORKER": str(nodes * max(1, gpus)),
        }
    return {}


def trainjob_reserved_env_reason(name: str) -> str | None:
    """Why ``name`` may not be set in a TrainJob or runtime, or None when it may."""
    if name in TRAINJOB_RESERVED_ENV:
        return TRAINJOB_RESERVED_ENV[name]
    if name in TRAINER_FRAMEWORK_ENV:
        return TRAINER_FRAMEWORK_ENV[name]
    if name.startswith("PET_"):
        return "PET_* variables are torchrun's settings; set nodes and procs_per_node instead"
    if name.startswith("OMPI_"):
        # Trainer v2.3.0 plugins/mpi/mpi.go sets the hostfile and slots through them.
        return (
            "Open MPI reads OMPI_* as mpirun settings, and Trainer's MPI plugin sets the "
            "hostfile, slots and ssh options through them"
        )
    return None


def trainjob_env(
    *,
    trainjob: str,
    nodes: int,
    procs_per_node: int,
    node_rank: int,
    master_addr: str | None = None,
    master_port: int = TRAINER_MASTER_PORT,
) -> dict[str, str]:
    """The env Kubeflow Trainer v2.3 gives container ``node`` of one pod of a TrainJob.

    ``trainjob`` is the object's name; the first pod's address is
    ``<trainjob>-node-0-0.<trainjob>`` (JobSet's headless service).
    """
    addr = master_addr if master_addr is not None else f"{trainjob}-node-0-0.{trainjob}"
    return {
        "PET_NNODES": str(nodes),
        "PET_NPROC_PER_NODE": str(procs_per_node),
        "PET_NODE_RANK": str(node_rank),
        "PET_MASTER_ADDR": addr,
        "PET_MASTER_PORT": str(master_port),
    }


# mpi-operator v0.8 (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go): the hostfile
# ConfigMap is mounted at /etc/mpi on the launcher, whose first container gets the variables
# below (newLauncherPodTemplate); workers get K_MPI_JOB_ROLE=worker (newWorker).
MPI_HOSTFILE = "/etc/mpi/hostfile"

_MPI_SETS = "mpi-operator sets it on the launcher from the hostfile and procs_per_node"
MPIJOB_RESERVED_ENV: dict[str, str] = {
    "K_MPI_JOB_ROLE": "mpi-operator sets it to launcher or worker",
    "I_MPI_HYDRA_HOST_FILE": _MPI_SETS,
    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": _MPI_SETS,
    "I_MPI_PERHOST": _MPI_SETS,
    "HYDRA_HOST_FILE": _MPI_SETS,
    "HYDRA_LAUNCH_EXTRA_ARGS": _MPI_SETS,
}


def mpijob_reserved_env_reason(name: str) -> str | None:
    """Why an MPIJob may not set ``name``, or None when it may."""
    if name in MPIJOB_RESERVED_ENV:
        return MPIJOB_RESERVED_ENV[name]
    if name.startswith("OMPI_"):
        # Open MPI reads every OMPI_* variable as a setting of mpirun; the operator's hostfile,
        # slots and ssh options are among them, and one set here would override them.
        return (
            "Open MPI reads OMPI_* as mpirun settings, and mpi-operator sets the hostfile, "
            "slots and ssh options through them; pass MCA parameters with launcher_args="
            "['--mca', NAME, VALUE]"
        )
    return None


def mpijob_env(
    *, implementation: str, slots: int, role: str, launcher_as_worker: bool = False
) -> dict[str, str]:
    """The env mpi-operator v0.8 gives the first container of a launcher or worker pod."""
    if role == "worker":
        return {"K_MPI_JOB_ROLE": "worker"}
    env = {"K_MPI_JOB_ROLE": "launcher"}
    if implementation == "OpenMPI":
        env |= {
            "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_default_hostfile": MPI_HOSTFILE,
            "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
            "OMPI_MCA_orte_set_default_slots": str(slots),
        }
    elif implementation == "Intel":
        env |= {
            "I_MPI_HYDRA_HOST_FILE": MPI_HOSTFILE,
            "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
            "I_MPI_PERHOST": str(slots),
        }
    else:
        env |= {
            "HYDRA_HOST_FILE": MPI_HOSTFILE,
            "HYDRA_LAUNCH_EXTRA_ARGS": "-o ConnectionAttempts=10",
        }
    if not launcher_as_worker:
        # The operator hides GPUs from a launcher that is not a worker.
        env |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    return env


# Training Operator v1.9 TFJob (pkg/controller.v1/tensorflow/tensorflow.go genTFConfigJSONStr):
# TF_CONFIG on container "tensorflow" of every pod of a distributed job, port "tfjob-port".
TFJOB_PORT = 2222
_TFJOB_RESERVED = {
    "TF_CONFIG": "the Training Operator sets it to the job's cluster and the pod's task",
}


def tf_config(
    *,
    job: str,
    namespace: str,
    counts: dict[str, int],
    role: str,
    index: int,
    ports: dict[str, int] | None = None,
) -> str | None:
    """TF_CONFIG as the operator writes it for pod ``index`` of replica type ``role``, or None
    when the job is not distributed (one pod in all); each type's addresses use its own
    ``tfjob-port`` (``ports``, default 2222). Go's encoding/json sorts map keys and writes no
    spaces."""
    if sum(counts.values()) == 1:
        return None
    cluster = {
        rtype.lower(): [
            f"{job}-{rtype.lower()}-{i}.{namespace}.svc:{(ports or {}).get(rtype, TFJOB_PORT)}"
            for i in range(count)
        ]
        for rtype, count in counts.items()
    }
    config = {
        "cluster": dict(sorted(cluster.items())),
        "task": {"type": role.lower(), "index": index},
        "environment": "cloud",
    }
    return json.dumps(config, separators=(",", ":"))


# Training Operator v1.9 PaddleJob (pkg/controller.v1/paddlepaddle/envvar.go setPodEnv): on
# every container of every pod, the rendezvous of paddle.distributed.launch; the port is the
# one named "master" (pkg/apis/kubeflow.org/v1/paddlepaddle_types.go).
PADDLEJOB_PORT = 36543
_PADDLE_SETS = "the Training Operator sets it"
_PADDLEJOB_RESERVED = {
    "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
    "PADDLE_JOB_ID": f"{_PADDLE_SETS} to the job's name",
    "PADDLE_NNODES": f"{_PADDLE_SETS} to the number of pods",
    "PADDLE_MASTER": f"{_PADDLE_SETS} to the rendezvous of the first pod",
    "POD_IP_DUMMY": f"{_PADDLE_SETS} on the first pod, as the rendezvous address",
    "PADDLE_SERVER_NUM": f"{_PADDLE_SETS} on parameter servers",
    "PADDLE_TRAINER_NUM": f"{_PADDLE_SETS} on Workers of a job with parameter servers",
    # paddle-operator v0.3.5 (controllers/paddlejob_helper.go constructPod, constructConfigMap):
    # on the first container, and from the ConfigMap <job> it writes once every pod has an IP.
    "POD_IP": "paddle-operator sets it to the pod's IP",
    "PADDLE_TRAINER_ID": "paddle-operator sets it to the pod's index",
    "TRAINING_ROLE": "paddle-operator sets it to PSERVER or TRAINER",
    "PADDLE_TRAINING_ROLE": "paddle-operator sets it to PSERVER or TRAINER",
    "TRAINER_PORTS_NUM": "paddle-operator sets it (its ConfigMap)",
    "PADDLE_PORT": "paddle-operator sets it (its ConfigMap)",
    "PADDLE_PSERVERS_IP_PORT_LIST": "paddle-operator sets it to the servers (its ConfigMap)",
    "PADDLE_TRAINER_ENDPOINTS": "paddle-operator sets it to the trainers (its ConfigMap)",
    "PADDLE_TRAINERS": "paddle-operator sets it to the trainers' hosts (its ConfigMap)",
    "PADDLE_TRAINERS_NUM": "paddle-operator sets it to the number of Workers (its ConfigMap)",
    "PADDLE_WITH_GLOO": "paddle-operator sets it from with_gloo (its ConfigMap)",
    "PADDLE_GLOO_RENDEZVOUS": "paddle-operator sets it with with_gloo (its ConfigMap)",
    "PADDLE_GLOO_HTTP_ENDPOINT": "paddle-operator sets it to the first server (its ConfigMap)",
    "PADDLE_HETER_ENDPOINTS": "paddle-operator sets it to the heter workers (its ConfigMap)",
}


def paddlejob_env(
    *, job: str, counts: dict[str, int], role: str, index: int, port: int = PADDLEJOB_PORT
) -> dict[str, str]:
    """What the operator appends for pod ``index`` of replica type ``role``: the rendezvous is
    the first Master (parameter server) when there is one, else Worker 0, which reaches itself
    through its own pod IP (``$(POD_IP_DUMMY)``, a fieldRef of status.podIP), at the
    rendezvous role's port named ``master`` (``port``)."""
    first = "Master" if "Master" in counts else "Worker"
    env = {
        "PYTHONUNBUFFERED": "1",
        "PADDLE_JOB_ID": job,
        "PADDLE_NNODES": str(sum(counts.values())),
    }
    if role == first and index == 0:
        env["POD_IP_DUMMY"] = "<the pod's IP>"
        env["PADDLE_MASTER"] = f"$(POD_IP_DUMMY):{port}"
    else:
        env["PADDLE_MASTER"] = f"{job}-{first.lower()}-0:{port}"
    if "Master" in counts:
        env["PADDLE_SERVER_NUM" if role == "Master" else "PADDLE_TRAINER_NUM"] = "1"
    return env


def paddle_operator_env(
    *,
    job: str,
    counts: dict[str, int],
    role: str,
    intranet: str | None = None,
    with_gloo: int | None = None,
    index: int = 0,
) -> dict[str, str]:
    """What paddle-operator gives pod ``index`` of ``role`` (``ps``, ``worker`` or ``heter``):
    its own variables (POD_IP is the pod's name behind Services, else its IP), then its
    ConfigMap ``<job>``'s keys, whose endpoints it knows only once every pod has an IP (a
    random port in 36000-55999), or, with ``intranet="Service"``, each pod's Service at port
    36000 (controllers/paddlejob_helper.go constructPod, constructConfigMap)."""
    later = "<once every pod has an IP>"

    def endpoints(r: str) -> str:
        if intranet != "Service":
            return later
        return ",".join(f"{job}-{r}-{i}:36000" for i in range(counts.get(r, 0)))

    env = {
        "POD_IP": f"{job}-{role}-{index}" if intranet == "Service" else "<the pod's IP>",
        "PADDLE_TRAINER_ID": str(index),
        # api/v1/paddlejob_types.go TrainingRole.
        "TRAINING_ROLE": {"ps": "PSERVER", "heter": "HETER"}.get(role, "TRAINER"),
    }
    env["PADDLE_TRAINING_ROLE"] = env["TRAINING_ROLE"]
    env |= {"TRAINER_PORTS_NUM": "20", "PADDLE_PORT": later}
    if "ps" in counts:
        env["PADDLE_PSERVERS_IP_PORT_LIST"] = endpoints("ps")
    trainers = endpoints("worker")
    hosts = (
        trainers if trainers == later else ",".join(e.split(":")[0] for e in trainers.split(","))
    )
    env |= {
        "PADDLE_TRAINER_ENDPOINTS": trainers,
        "PADDLE_TRAINERS": hosts,
        "PADDLE_TRAINERS_NUM": str(counts.get("worker", 0)),
    }
    if "heter" in counts:
        env["PADDLE_HETER_ENDPOINTS"] = endpoints("heter")
    if with_gloo and "ps" in counts:
        env |= {
            "PADDLE_WITH_GLOO": str(with_gloo),
            "PADDLE_GLOO_RENDEZVOUS": "3",
            "PADDLE_GLOO_HTTP_ENDPOINT": "<the first server, its port + 18>",
        }
    return env


# Training Operator v1.9 XGBoostJob (pkg/controller.v1/xgboost/xgboost.go SetPodEnv): on every
# container of every pod; the port is the one named "xgboostjob-port" on container "xgboost"
# (pkg/apis/kubeflow.org/v1/xgboost_types.go), read from the Master's and the Workers' specs.
XGBOOSTJOB_PORT = 9999
_XGB_SETS = "the Training Operator sets it"
_XGBOOSTJOB_RESERVED = {
    "MASTER_ADDR": f"{_XGB_SETS} to the Master pod's Service, where the tracker listens",
    "MASTER_PORT": f"{_XGB_SETS} to the Master's xgboostjob-port",
    "WORLD_SIZE": f"{_XGB_SETS} to the number of pods",
    "RANK": f"{_XGB_SETS} to the pod's rank (the Master 0, Worker i i + 1)",
    "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
    "WORKER_PORT": f"{_XGB_SETS} to the Workers' xgboostjob-port (LightGBM reads it)",
    "WORKER_ADDRS": f"{_XGB_SETS} to the Workers' Services (LightGBM reads it)",
}


def xgboostjob_env(*, job: str, counts: dict[str, int], role: str, index: int) -> dict[str, str]:
    """What the operator appends for pod ``index`` of replica type ``role`` (``Master`` or
    ``Worker``): a Worker's rank is its index plus the Master's replicas; ``WORKER_PORT`` and
    ``WORKER_ADDRS`` (``total - 1`` Worker Services) only when the job has more than one pod."""
    total = sum(counts.values())
    rank = index + (counts.get("Master", 0) if role == "Worker" else 0)
    env = {
        "MASTER_PORT": str(XGBOOSTJOB_PORT),
        "MASTER_ADDR": f"{job}-master-0",
        "WORLD_SIZE": str(total),
        "RANK": str(rank),
        "PYTHONUNBUFFERED": "1",
    }
    if total > 1:
        env["WORKER_PORT"] = str(XGBOOSTJOB_PORT)
        env["WORKER_ADDRS"] = ",".join(f"{job}-worker-{i}" for i in range(total - 1))
    return env


# Training Operator v1.9 JAXJob (pkg/controller.v1/jax/envvar.go setPodEnv): on every container
# of every Worker; the coordinator is Worker 0 at the port named "jaxjob-port" on container
# "jax" (pkg/apis/kubeflow.org/v1/jax_types.go), which jax.distributed.initialize() reads.
JAXJOB_PORT = 6666
_JAX_SETS = "the Training Operator sets it"
_JAXJOB_RESERVED = {
    "PYTHONUNBUFFERED": "the Training Operator always appends PYTHONUNBUFFERED=1",
    "COORDINATOR_PORT": f"{_JAX_SETS} to the first Worker's jaxjob-port",
    "COORDINATOR_ADDRESS": f"{_JAX_SETS} to the first Worker's Service",
    "NUM_PROCESSES": f"{_JAX_SETS} to the number of Workers",
    "PROCESS_ID": f"{_JAX_SETS} to the Worker's index",
}


def jaxjob_env(*, job: str, workers: int, index: int) -> dict[str, str]:
    """What the operator appends for Worker ``index`` of ``workers``."""
    return {
        "PYTHONUNBUFFERED": "1",
        "COORDINATOR_PORT": str(JAXJOB_PORT),
        "COORDINATOR_ADDRESS": f"{job}-worker-0",
        "NUM_PROCESSES": str(workers),
        "PROCESS_ID": str(index),
    }


# KubeRay v1.7.0 sets these on the Ray container of every pod (ray-operator/controllers/ray/
# common/pod.go setContainerEnvVars) and on the submitter (rayjob_controller.go
# configureSubmitterContainer). RAY_PORT, RAY_ADDRESS and the usage flags only when the
# container has none: a job's own value would point ray.init() or the workers elsewhere.
RAY_GCS_PORT = 6379
_KUBERAY = "KubeRay sets it"
_RAYJOB_RESERVED = {
    "RAY_CLUSTER_NAME": f"{_KUBERAY} to the RayCluster's name",
    "RAY_CLUSTER_NAMESPACE": f"{_KUBERAY} to the namespace",
    "RAY_CLOUD_INSTANCE_ID": f"{_KUBERAY} to the pod's name (Ray's autoscaler reads it)",
    "RAY_NODE_TYPE_NAME": f"{_KUBERAY} to the pod's group",
    "KUBERAY_GEN_RAY_START_CMD": f"{_KUBERAY} to the `ray start` command it generates",
    "FQ_RAY_IP": f"{_KUBERAY} on workers to the head's Service",
    "RAY_IP": f"{_KUBERAY} on workers to the head's Service",
    "RAY_PORT": f"{_KUBERAY} to the head's GCS port, which the workers join",
    "RAY_ADDRESS": f"{_KUBERAY} to the head's GCS address, where ray.init() connects",
    "RAY_USAGE_STATS_KUBERAY_IN_USE": _KUBERAY,
    "RAY_USAGE_STATS_EXTRA_TAGS": f"{_KUBERAY} on the head",
    "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE": _KUBERAY,
    "RAY_DASHBOARD_ADDRESS": f"{_KUBERAY} on the submitter to the head's dashboard",
    "RAY_JOB_SUBMISSION_ID": f"{_KUBERAY} on the submitter to the job's id",
}


def rayjob_env(*, head: bool, group: str, start: str) -> dict[str, str]:
    """What KubeRay appends to the Ray container of a head (``head``) or worker pod of
    ``group``; ``start`` describes the ``ray start`` command it generates. Values known only
    on the cluster are described in angle brackets."""
    cluster = "<the RayCluster: the RayJob's name and 5 random characters>"
    env: dict[str, str] = {}
    if not head:
        fqdn = "<cluster>-head-svc.<namespace>.svc.cluster.local"
        env |= {"FQ_RAY_IP": fqdn, "RAY_IP": "<cluster>-head-svc"}
    env |= {
        "RAY_CLUSTER_NAME": cluster,
        "RAY_CLUSTER_NAMESPACE": "<the namespace>",
        "RAY_CLOUD_INSTANCE_ID": "<the pod's name>",
        "RAY_NODE_TYPE_NAME": group,
        "KUBERAY_GEN_RAY_START_CMD": start,
        "RAY_PORT": str(RAY_GCS_PORT),
        "RAY_ADDRESS": f"{'127.0.0.1' if head else env['FQ_RAY_IP']}:{RAY_GCS_PORT}",
        "RAY_USAGE_STATS_KUBERAY_IN_USE": "1",
    }
    if head:
        env["RAY_USAGE_STATS_EXTRA_TAGS"] = "kuberay_version=v1.7.0;kuberay_crd=RayJob"
    env["RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"] = "1"
    return env
