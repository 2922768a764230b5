"""What Training Operator v1.9 and paddle-operator v0.3.5 inject into a PaddleJob's containers
(render/paddle.py).
"""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = ["PADDLEJOB", "PADDLEJOB_PORT", "paddle_operator_env", "paddlejob_env"]

# Training Operator v1.9 PaddleJob (pkg/controller.v1/paddlepaddle/envvar.go setPodEnv): on
# every container of every pod, the rendezvous of paddle.distributed.launch; the port is the
# one named "master" (pkg/apis/kubeflow.org/v1/paddlepaddle_types.go).
PADDLEJOB_PORT = 36543
_PADDLE_SETS = "the Training Operator sets it"
PADDLEJOB = ReservedEnv(
    kinds=("PaddleJob",),
    names={
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
    },
)


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
