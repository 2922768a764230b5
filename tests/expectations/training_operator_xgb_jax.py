"""Kubeflow Training Operator v1.9.4 (github.com/kubeflow/trainer, tag v1.9.4): XGBoostJob and
JAXJob, from the operator's own tests (pkg/controller.v1/xgboost/, pkg/controller.v1/jax/,
pkg/apis/kubeflow.org/v1/, pkg/webhooks/) and Kueue v0.19.2's integrations for both kinds.

Read at the release-1.9 branch head (078ec30, the newest 1.9 commit the mirror holds; the
files below are the same at v1.9.4). Upstream tests no env for an XGBoostJob: those cases cite
``xgboost.go SetPodEnv`` itself and say so (``(no upstream test)``).
"""

from __future__ import annotations

from typing import Any

from trainkit import JAXJob, Resources, Role, Script, XGBoostJob

from . import (
    ABSENT,
    Case,
    Definition,
    Env,
    Gang,
    Health,
    Kueue,
    Manifest,
    PodNames,
    Pods,
    Port,
    Refused,
    Restart,
    Source,
    Succeeds,
)
from .training_operator import conditions, template

REPO, REF = "kubeflow/trainer", "v1.9.4"
XGB = "pkg/controller.v1/xgboost/xgboostjob_controller_test.go"
XGB_ENV = "pkg/controller.v1/xgboost/xgboost.go"
XGB_DEFAULTS = "pkg/apis/kubeflow.org/v1/xgboost_defaults_test.go"
XGB_WEBHOOK = "pkg/webhooks/xgboost/xgboostjob_webhook_test.go"
JAX = "pkg/controller.v1/jax/jaxjob_controller_test.go"
JAX_ENV = "pkg/controller.v1/jax/envvar_test.go"
JAX_WEBHOOK = "pkg/webhooks/jax/jaxjob_webhook_test.go"
KUEUE, KUEUE_REF = "kubernetes-sigs/kueue", "v0.19.2"
KUEUE_XGB = "pkg/controller/jobs/kubeflow/jobs/xgboostjob/xgboostjob_controller_test.go"
KUEUE_JAX = "pkg/controller/jobs/kubeflow/jobs/jaxjob/jaxjob_controller_test.go"

XGB_HEALTH = "resource.customizations.health.kubeflow.org_XGBoostJob"
JAX_HEALTH = "resource.customizations.health.kubeflow.org_JAXJob"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


def kueue_src(file: str, case: str) -> Source:
    return Source(KUEUE, KUEUE_REF, file, case)


# --- the upstream fixtures, in our form ---------------------------------------------------------


def xgboostjob(
    replicas: dict[str, int], *, name: str = "test-job", port: int = 9999, **spec: Any
) -> dict[str, Any]:
    """newXGBoostForTest with the BeforeEach replica specs: container ``xgboost`` with its
    ``xgboostjob-port`` (expectedPort 9999), image ``test-image``."""
    specs = {
        role: {"replicas": count, "template": template("xgboost", "xgboostjob-port", port)}
        for role, count in replicas.items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "XGBoostJob",
        "metadata": {"name": name, "namespace": "xgboost-test"},
        "spec": {"xgbReplicaSpecs": specs, **spec},
    }


def jaxjob(workers: int, *, name: str = "test-job", port: int = 6666) -> dict[str, Any]:
    """newJAXJobForTest (and TestSetPodEnv's validJAXJob): Workers only, container ``jax``
    with its ``jaxjob-port`` 6666."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": {"name": name, "namespace": "jax-test"},
        "spec": {
            "jaxReplicaSpecs": {
                "Worker": {"replicas": workers, "template": template("jax", "jaxjob-port", port)}
            }
        },
    }


def kueue_job(kind: str, field: str, container: str, replicas: dict[str, int]) -> dict[str, Any]:
    """Kueue's MakeXGBoostJob / MakeJAXJob("<kind>", "ns") with the replica types given, one
    container asking for 1 CPU, labelled for LocalQueue ``lq``."""
    specs = {
        role: {
            "replicas": count,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": container,
                            "image": "pause",
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ]
                }
            },
        }
        for role, count in replicas.items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {
            "name": kind.lower(),
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
        },
        "spec": {field: specs},
    }


# --- trainkit's definitions for the same cases ----------------------------------------------------

RES = Resources(cpu=8, memory="32Gi", gpu=2)
FRAMEWORKS = {"kueue_frameworks": ["kubeflow.org/xgboostjob", "kubeflow.org/jaxjob"]}


def xgb(**kw: Any) -> XGBoostJob:
    fields: dict[str, Any] = {
        "name": "test-job",
        "image": "registry.example.com/test-image:1",
        "script": Script.file("train.py"),
        "resources": RES,
        "queue": "q",
    }
    return XGBoostJob(**(fields | kw))


def jax(**kw: Any) -> JAXJob:
    fields: dict[str, Any] = {
        "name": "test-job",
        "image": "registry.example.com/test-image:1",
        "script": Script.file("train.py"),
        "resources": RES,
        "queue": "q",
    }
    return JAXJob(**(fields | kw))


# --- XGBoostJob ----------------------------------------------------------------------------------

XGB_CASES = [
    Case(
        "xgb-master-and-workers",
        src(XGB, "When creating the XGBoostJob / Should resume XGBoostJob after it is unsuspended"),
        Manifest(xgboostjob({"Master": 1, "Worker": 2}), namespace="xgboost-test"),
        (
            Pods({"Master": 1, "Worker": 2}),
            PodNames({("Master", 0): "test-job-master-0", ("Worker", 0): "test-job-worker-0"}),
            Port("Master", 9999, "xgboostjob-port"),
            Port("Worker", 9999, "xgboostjob-port"),
        ),
    ),
    Case(
        "xgb-env-master",
        src(XGB_ENV, "(no upstream test) SetPodEnv, on the controller test's job"),
        Manifest(xgboostjob({"Master": 1, "Worker": 2}), namespace="xgboost-test"),
        (
            Env(
                "Master",
                0,
                {
                    "MASTER_PORT": "9999",
                    "MASTER_ADDR": "test-job-master-0",
                    "WORLD_SIZE": "3",
                    "RANK": "0",
                    "PYTHONUNBUFFERED": "1",
                    "WORKER_PORT": "9999",
                    # totalReplicas - 1 Worker names, whatever the Workers' own count.
                    "WORKER_ADDRS": "test-job-worker-0,test-job-worker-1",
                },
            ),
            # A Worker's rank is its index plus the Master's replicas.
            Env("Worker", 1, {"RANK": "2", "WORLD_SIZE": "3", "MASTER_ADDR": "test-job-master-0"}),
        ),
    ),
    Case(
        "xgb-env-port-from-the-spec",
        src(XGB_ENV, "(no upstream test) SetPodEnv: getPortFromXGBoostJob"),
        Manifest(xgboostjob({"Master": 1, "Worker": 1}, port=7777), namespace="xgboost-test"),
        (Env("Master", 0, {"MASTER_PORT": "7777", "WORKER_PORT": "7777"}),),
    ),
    Case(
        "xgb-env-master-alone",
        src(XGB_ENV, "(no upstream test) SetPodEnv: totalReplicas 1"),
        Manifest(xgboostjob({"Master": 1}), namespace="xgboost-test"),
        (
            Pods({"Master": 1}),
            Env(
                "Master",
                0,
                {"WORLD_SIZE": "1", "RANK": "0", "WORKER_PORT": ABSENT, "WORKER_ADDRS": ABSENT},
            ),
        ),
    ),
]

XGB_CASES += [
    Case(
        "xgb-definition-gang",
        src(XGB, "When creating the XGBoostJob / Should resume XGBoostJob after it is unsuspended"),
        Definition(xgb(nodes=3)),
        (
            Pods({"Master": 1, "Worker": 2}),
            Env("Worker", 0, {"RANK": "1", "WORLD_SIZE": "3", "MASTER_PORT": "9999"}),
            Gang(
                "test-job",
                3,
                "q",
                min_resources={"cpu": "24", "memory": "96Gi", "nvidia.com/gpu": "6"},
            ),
        ),
    ),
    Case(
        "xgb-default-restart-never",
        src(XGB_DEFAULTS, "TestSetDefaults_XGBoostJob / set spec with minimum setting"),
        Manifest(xgboostjob({"Master": 1, "Worker": 1}), namespace="xgboost-test"),
        (
            Restart("Master", "Never"),
            Restart("Worker", "Never"),
            # xgboostjob_controller.go UpdateJobStatus: the Master's success ends the job.
            Succeeds(("Master",), "all", None),
        ),
    ),
    Case(
        "xgb-definition-restart-on-failure",
        src(XGB_DEFAULTS, "TestSetDefaults_XGBoostJob / Set spec with restart policy"),
        Definition(xgb(nodes=2, restart_policy="OnFailure")),
        (Restart("Master", "OnFailure"), Restart("Worker", "OnFailure")),
    ),
    Case(
        "xgb-refuses-two-masters",
        src(XGB_WEBHOOK, "the number of replicas in masterReplica is other than 1"),
        Definition(lambda: xgb(nodes=3, master=Role(replicas=2))),
        (Refused("an XGBoostJob has one Master"),),
        kind="XGBoostJob",
    ),
    Case(
        "xgb-suspended",
        src(XGB, "Shouldn't create resources if XGBoostJob is suspended"),
        None,
        (
            Health(
                XGB_HEALTH,
                conditions(
                    "XGBoostJob", ("Created", "True", "Created"), ("Suspended", "True", "Suspended")
                ),
                "Suspended",
            ),
        ),
        kind="XGBoostJob",
    ),
    Case(
        "xgb-resumed",
        src(XGB, "Should delete resources after XGBoostJob is suspended; Should resume XGBoostJob"),
        None,
        (
            Health(
                XGB_HEALTH,
                conditions(
                    "XGBoostJob",
                    ("Created", "True", "Created"),
                    ("Suspended", "False", "Resumed"),
                    ("Running", "True", "Running"),
                ),
                "Progressing",
            ),
        ),
        kind="XGBoostJob",
    ),
    Case(
        "kueue-xgboostjob-pod-sets",
        kueue_src(KUEUE_XGB, "TestPodSets / no annotations"),
        Manifest(kueue_job("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Worker": 1, "Master": 1})),
        # Master first whatever the map's order (OrderedReplicaTypes).
        (Kueue("lq", (("master", 1), ("worker", 1)), requests={"master": {"cpu": "1"}}),),
    ),
    Case(
        "kueue-xgboostjob-definition",
        kueue_src(KUEUE_XGB, "TestOrderedReplicaTypes / job has all replicas"),
        Definition(
            xgb(nodes=3),
            scheduler="kueue",
            operators=("training-operator",),
            cluster=FRAMEWORKS,
        ),
        (Kueue("q", (("master", 1), ("worker", 2))),),
    ),
]

# --- JAXJob --------------------------------------------------------------------------------------

JAX_CASES = [
    Case(
        "jax-env-one-worker",
        src(JAX_ENV, "TestSetPodEnv / successful environment variable setup"),
        Manifest(jaxjob(1, name="test-jaxjob"), namespace="jax-test"),
        (
            Pods({"Worker": 1}),
            Env(
                "Worker",
                0,
                {
                    "PYTHONUNBUFFERED": "1",
                    "COORDINATOR_PORT": "6666",
                    "COORDINATOR_ADDRESS": "test-jaxjob-worker-0",
                    "NUM_PROCESSES": "1",
                    "PROCESS_ID": "0",
                },
            ),
        ),
    ),
    Case(
        "jax-env-port-from-the-spec",
        src(JAX_ENV, "TestSetPodEnv / successful environment variable setup (validPort)"),
        # envvar.go getPortFromJAXJob: the Worker's jaxjob-port, whatever its number.
        Manifest(jaxjob(2, port=7777), namespace="jax-test"),
        (Env("Worker", 1, {"COORDINATOR_PORT": "7777"}),),
    ),
    Case(
        "jax-workers",
        src(JAX, "When creating the JAXJob / Should resume JAXJob after JAXJob is unsuspended"),
        Manifest(jaxjob(2), namespace="jax-test"),
        (
            Pods({"Worker": 2}),
            PodNames({("Worker", 0): "test-job-worker-0", ("Worker", 1): "test-job-worker-1"}),
            Port("Worker", 6666, "jaxjob-port"),
            Env(
                "Worker",
                1,
                {
                    "COORDINATOR_ADDRESS": "test-job-worker-0",
                    "NUM_PROCESSES": "2",
                    "PROCESS_ID": "1",
                },
            ),
        ),
    ),
    Case(
        "jax-definition-gang",
        src(JAX, "When creating the JAXJob / Should resume JAXJob after JAXJob is unsuspended"),
        Definition(jax(nodes=4)),
        (
            Pods({"Worker": 4}),
            Env("Worker", 3, {"PROCESS_ID": "3", "NUM_PROCESSES": "4"}),
            Gang(
                "test-job",
                4,
                "q",
                min_resources={"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "8"},
            ),
        ),
    ),
    Case(
        "jax-default-restart-never",
        src(JAX, "When creating the JAXJob (jax_defaults.go JAXJobDefaultRestartPolicy)"),
        Manifest(jaxjob(2), namespace="jax-test"),
        # jaxjob_controller.go UpdateJobStatus: the job succeeds when every Worker has.
        (Restart("Worker", "Never"), Succeeds(("Worker",), "all", None)),
    ),
    Case(
        "jax-suspended",
        src(JAX, "Shouldn't create resources if JAXJob is suspended"),
        None,
        (
            Health(
                JAX_HEALTH,
                conditions(
                    "JAXJob", ("Created", "True", "Created"), ("Suspended", "True", "Suspended")
                ),
                "Suspended",
            ),
        ),
        kind="JAXJob",
    ),
    Case(
        "jax-resumed",
        src(JAX, "Should delete resources after JAXJob is suspended; Should resume JAXJob"),
        None,
        (
            Health(
                JAX_HEALTH,
                conditions(
                    "JAXJob",
                    ("Created", "True", "Created"),
                    ("Suspended", "False", "Resumed"),
                    ("Running", "True", "Running"),
                ),
                "Progressing",
            ),
        ),
        kind="JAXJob",
    ),
    Case(
        "kueue-jaxjob-pod-sets",
        kueue_src(KUEUE_JAX, "TestPodSets / no annotations"),
        Manifest(kueue_job("JAXJob", "jaxReplicaSpecs", "jax", {"Worker": 1})),
        (Kueue("lq", (("worker", 1),), requests={"worker": {"cpu": "1"}}),),
    ),
    Case(
        "kueue-jaxjob-definition",
        kueue_src(KUEUE_JAX, "TestOrderedReplicaTypes / job has worker replicas"),
        Definition(
            jax(nodes=2),
            scheduler="kueue",
            operators=("training-operator",),
            cluster=FRAMEWORKS,
        ),
        (Kueue("q", (("worker", 2),)),),
    ),
]

CASES = [*XGB_CASES, *JAX_CASES]
