"""Kubeflow Training Operator v1.9.4 (github.com/kubeflow/trainer, tag v1.9.4): PyTorchJob,
TFJob and PaddleJob, from the operator's own tests under pkg/controller.v1/ and pkg/util/."""

from __future__ import annotations

from typing import Any

from trainkit import Elastic, PaddleJob, PyTorchJob, Resources, Role, Script, TFJob

from . import (
    ABSENT,
    PRESENT,
    Case,
    Definition,
    Env,
    FieldRef,
    Gang,
    Health,
    InitContainers,
    Manifest,
    NoGang,
    PodNames,
    Pods,
    Port,
    Restart,
    Source,
    Succeeds,
    World,
)

REPO, REF = "kubeflow/trainer", "v1.9.4"
PYTORCH = "pkg/controller.v1/pytorch/pytorchjob_controller_test.go"
ELASTIC = "pkg/controller.v1/pytorch/elastic_test.go"
INIT = "pkg/controller.v1/pytorch/initcontainer_test.go"
TF_POD = "pkg/controller.v1/tensorflow/pod_test.go"
TF_STATUS = "pkg/controller.v1/tensorflow/status_test.go"
TF_JOB = "pkg/controller.v1/tensorflow/job_test.go"
TF_CONTROLLER = "pkg/controller.v1/tensorflow/tfjob_controller_test.go"
PADDLE = "pkg/controller.v1/paddlepaddle/paddlepaddle_controller_test.go"
COMMON_POD = "pkg/controller.v1/common/pod_test.go"
COMMON_JOB = "pkg/controller.v1/common/job_test.go"
COMMON_UTIL = "pkg/controller.v1/common/util_test.go"
TRAIN_UTIL = "pkg/util/train/train_util_test.go"

PYTORCH_HEALTH = "resource.customizations.health.kubeflow.org_PyTorchJob"
TFJOB_HEALTH = "resource.customizations.health.kubeflow.org_TFJob"
PADDLE_HEALTH = "resource.customizations.health.kubeflow.org_PaddleJob"


def src(file: str, case: str) -> Source:
    return Source(REPO, REF, file, case)


# --- the upstream fixtures, in our form ---------------------------------------------------------


def template(container: str, port_name: str, port: int | None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": container, "image": "test-image", **extra}
    if port is not None:
        c["ports"] = [{"name": port_name, "containerPort": port, "protocol": "TCP"}]
    return {"spec": {"containers": [c]}}


def pytorchjob(
    name: str,
    replicas: dict[str, int],
    *,
    port: int | None = 8080,
    restart: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """newPyTorchJobForTest with the replica specs the tests give: container ``pytorch``, its
    ``pytorchjob-port``, image ``test-image``."""
    specs = {}
    for role, count in replicas.items():
        specs[role] = {"replicas": count, "template": template("pytorch", "pytorchjob-port", port)}
        if restart is not None:
            specs[role]["restartPolicy"] = restart
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "pytorch-test"},
        "spec": {"pytorchReplicaSpecs": specs, **spec},
    }


def tfjob(replicas: dict[str, int], *, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    """testutil.NewTFJob and friends: ``test-tfjob``, container ``tensorflow`` with its
    ``tfjob-port`` 2222, the types the test gives (Worker, PS, Chief, Evaluator)."""
    specs = {
        role: {"replicas": count, "template": template("tensorflow", "tfjob-port", 2222)}
        for role, count in replicas.items()
    }
    for role, policy in spec.pop("restart", {}).items():
        specs[role]["restartPolicy"] = policy
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "test-tfjob", "namespace": namespace},
        "spec": {"tfReplicaSpecs": specs, **spec},
    }


def paddlejob(replicas: dict[str, int], port: int = 8080) -> dict[str, Any]:
    """newPaddleJobForTest: ``test-job``, container ``paddle`` with its port ``master``."""
    specs = {
        role: {"replicas": count, "template": template("paddle", "master", port)}
        for role, count in replicas.items()
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PaddleJob",
        "metadata": {"name": "test-job", "namespace": "paddle-test"},
        "spec": {"paddleReplicaSpecs": specs},
    }


def condition(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def conditions(kind: str, *pairs: tuple[str, str, str]) -> dict[str, Any]:
    """A v1 job's status: ``(type, status, reason suffix)`` conditions as the operator writes
    them (reason ``<Kind><Suffix>``, the message the tests compare)."""
    out = []
    for type_, status, suffix in pairs:
        message = f"{kind} test-job is {suffix.lower()}."
        out.append(condition(type_, status, f"{kind}{suffix}", message))
    return {"conditions": out}


# --- trainkit's definitions for the same cases ----------------------------------------------------

RES = Resources(cpu=8, memory="32Gi", gpu=2)


def torch(**kw: Any) -> PyTorchJob:
    fields: dict[str, Any] = {
        "name": "test-job",
        "image": "registry.example.com/test-image:1",
        "script": Script.file("train.py"),
        "nodes": 3,
        "resources": RES,
        "queue": "q",
    }
    return PyTorchJob(**(fields | kw))


def tf(**kw: Any) -> TFJob:
    fields: dict[str, Any] = {
        "name": "test-tfjob",
        "image": "registry.example.com/test-image:1",
        "script": Script.file("train.py"),
        "resources": RES,
        "queue": "q",
    }
    return TFJob(**(fields | kw))


def paddle(**kw: Any) -> PaddleJob:
    fields: dict[str, Any] = {
        "name": "test-job",
        "image": "registry.example.com/test-image:1",
        "script": Script.file("train.py"),
        "resources": RES,
        "queue": "q",
    }
    return PaddleJob(**(fields | kw))


# --- PyTorchJob ----------------------------------------------------------------------------------

PYTORCH_CASES = [
    Case(
        "pytorch-master-env-port-and-names",
        src(PYTORCH, "When creating the PyTorchJob / Should get the corresponding resources"),
        Manifest(pytorchjob("test-job", {"Master": 1, "Worker": 2}), namespace="pytorch-test"),
        (
            Pods({"Master": 1, "Worker": 2}),
            PodNames({("Master", 0): "test-job-master-0", ("Worker", 0): "test-job-worker-0"}),
            Port("Master", 8080, "pytorchjob-port"),
            # MASTER_PORT is the Master Service's port, the container's pytorchjob-port;
            # nprocPerNode left out defaults to auto.
            Env(
                "Master",
                0,
                {
                    "MASTER_PORT": "8080",
                    "MASTER_ADDR": "test-job-master-0",
                    "PET_NPROC_PER_NODE": "auto",
                },
            ),
        ),
    ),
    Case(
        "pytorch-master-success-ends-the-job",
        src(PYTORCH, "When creating the PyTorchJob / Should get the corresponding resources"),
        Manifest(pytorchjob("test-job", {"Master": 1, "Worker": 2})),
        (
            Succeeds(("Master",), "all", None),
            Health(
                PYTORCH_HEALTH,
                conditions(
                    "PyTorchJob",
                    ("Created", "True", "Created"),
                    ("Running", "False", "Running"),
                    ("Succeeded", "True", "Succeeded"),
                ),
                "Healthy",
            ),
        ),
    ),
    Case(
        "pytorch-queue-from-scheduling-policy",
        src(PYTORCH, "Shouldn't be updated resources if spec.runPolicy.schedulingPolicy.queue"),
        Manifest(
            pytorchjob(
                "test-job",
                {"Master": 1, "Worker": 2},
                runPolicy={"schedulingPolicy": {"queue": "initial-queue"}},
            )
        ),
        (Gang("test-job", 3, "initial-queue"),),
    ),
    Case(
        "pytorch-suspended-job-is-suspended",
        src(PYTORCH, "Shouldn't create resources if PyTorchJob is suspended"),
        None,
        (
            Health(
                PYTORCH_HEALTH,
                conditions(
                    "PyTorchJob", ("Created", "True", "Created"), ("Suspended", "True", "Suspended")
                ),
                "Suspended",
                "PyTorchJob test-job is suspended.",
            ),
        ),
        kind="PyTorchJob",
    ),
    Case(
        "pytorch-running-then-suspended",
        src(PYTORCH, "Should delete resources after PyTorchJob is suspended (suspended)"),
        None,
        (
            Health(
                PYTORCH_HEALTH,
                conditions(
                    "PyTorchJob",
                    ("Created", "True", "Created"),
                    ("Running", "False", "Suspended"),
                    ("Suspended", "True", "Suspended"),
                ),
                "Suspended",
            ),
        ),
        kind="PyTorchJob",
    ),
    Case(
        "pytorch-running",
        src(PYTORCH, "Should delete resources after PyTorchJob is suspended (running)"),
        None,
        (
            Health(
                PYTORCH_HEALTH,
                conditions(
                    "PyTorchJob", ("Created", "True", "Created"), ("Running", "True", "Running")
                ),
                "Progressing",
                "PyTorchJob test-job is running.",
            ),
        ),
        kind="PyTorchJob",
    ),
    Case(
        "pytorch-resumed",
        src(PYTORCH, "Should resume PyTorchJob after PyTorchJob is unsuspended"),
        None,
        (
            Health(
                PYTORCH_HEALTH,
                conditions(
                    "PyTorchJob",
                    ("Created", "True", "Created"),
                    ("Suspended", "False", "Resumed"),
                    ("Running", "True", "Running"),
                ),
                "Progressing",
            ),
        ),
        kind="PyTorchJob",
    ),
    Case(
        "pytorch-managed-by-kueue-has-no-conditions",
        src(PYTORCH, "Should not reconcile a job while managed by external controller"),
        None,
        (Health(PYTORCH_HEALTH, {"conditions": []}, "Progressing", "Waiting"),),
        kind="PyTorchJob",
    ),
    Case(
        "pytorch-elastic-env",
        src(
            PYTORCH, "When creating the elastic PyTorchJob / Should get the corresponding resources"
        ),
        Manifest(
            pytorchjob(
                "elastic-job",
                {"Worker": 1},
                elasticPolicy={
                    "rdzvBackend": "c10d",
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "maxRestarts": 3,
                },
            )
        ),
        (
            Pods({"Worker": 1}),
            Port("Worker", 8080, "pytorchjob-port"),
            Env(
                "Worker",
                0,
                {
                    "PET_RDZV_BACKEND": "c10d",
                    "PET_NNODES": "1:3",
                    "PET_RDZV_ENDPOINT": "elastic-job-worker-0:8080",
                    "PET_MAX_RESTARTS": "3",
                },
            ),
            # A Worker's success ends an elastic job (no Master).
            Succeeds(("Worker",), "any", None),
        ),
    ),
    Case(
        "pytorch-elastic-policy-every-field",
        src(ELASTIC, "TestElasticGenerate / With ElasticPolicy"),
        Manifest(
            pytorchjob(
                "test",
                {"Worker": 1},
                elasticPolicy={
                    "minReplicas": 1,
                    "maxReplicas": 3,
                    "rdzvBackend": "c10d",
                    "rdzvPort": 1234,
                    "rdzvHost": "localhost",
                    "rdzvId": "rdzv-id",
                    "rdzvConf": [
                        {"key": "rdzv-conf-name", "value": "rdzv-conf-value"},
                        {"key": "rdzv-conf-name-1", "value": "rdzv-conf-value-1"},
                    ],
                    "maxRestarts": 3,
                },
            )
        ),
        (
            Env(
                "Worker",
                0,
                {
                    "PET_MAX_RESTARTS": "3",
                    "PET_RDZV_BACKEND": "c10d",
                    "PET_RDZV_ENDPOINT": "localhost:1234",
                    "PET_RDZV_ID": "rdzv-id",
                    "PET_RDZV_CONF": (
                        "rdzv-conf-name=rdzv-conf-value,rdzv-conf-name-1=rdzv-conf-value-1"
                    ),
                    "PET_NNODES": "1:3",
                },
            ),
        ),
    ),
    Case(
        "pytorch-no-elastic-policy-no-rendezvous",
        src(ELASTIC, "TestElasticGenerate / Without ElasticPolicy"),
        Manifest(pytorchjob("test", {"Worker": 1})),
        (
            # envvar.go setPodEnv: no rendezvous without elasticPolicy, and no master
            # address, WORLD_SIZE or RANK without a Master.
            Env(
                "Worker",
                0,
                {
                    "PET_RDZV_ENDPOINT": ABSENT,
                    "PET_RDZV_BACKEND": ABSENT,
                    "PET_MAX_RESTARTS": ABSENT,
                    "PET_NNODES": "1",
                    "MASTER_ADDR": ABSENT,
                    "WORLD_SIZE": ABSENT,
                    "RANK": ABSENT,
                },
            ),
        ),
    ),
    Case(
        "pytorch-init-container-worker-only-job",
        src(INIT, "TestInitContainer / Worker only: no init container"),
        Manifest(pytorchjob("test", {"Worker": 1}, elasticPolicy={"minReplicas": 1})),
        (InitContainers("Worker", ()),),
    ),
    Case(
        "pytorch-init-container-on-workers",
        src(INIT, "TestInitContainer / Master and Worker: the Worker waits for the Master"),
        Manifest(pytorchjob("test", {"Master": 1, "Worker": 1})),
        (InitContainers("Worker", ("init-pytorch",)), InitContainers("Master", ())),
    ),
    Case(
        "pytorch-definition-env-ranks-and-world",
        src(PYTORCH, "When creating the PyTorchJob / Should get the corresponding resources"),
        Definition(torch()),
        (
            Pods({"Master": 1, "Worker": 2}),
            PodNames({("Worker", 1): "test-job-worker-1"}),
            Port("Master", 23456, "pytorchjob-port"),
            Env(
                "Master",
                0,
                {
                    "MASTER_PORT": "23456",
                    "MASTER_ADDR": "test-job-master-0",
                    "PET_NPROC_PER_NODE": "2",
                    "WORLD_SIZE": "6",
                    "RANK": "0",
                },
            ),
            # envvar.go setPodEnv: a Worker's rank is its index + 1.
            Env("Worker", 1, {"RANK": "2", "PET_NODE_RANK": "2", "PET_NNODES": "3"}),
            World("2", 6),
            InitContainers("Worker", ("init-pytorch",)),
        ),
    ),
    Case(
        "pytorch-definition-queue-and-gang",
        src(PYTORCH, "Shouldn't be updated resources if spec.runPolicy.schedulingPolicy.queue"),
        Definition(torch()),
        (
            Gang(
                "test-job",
                3,
                "q",
                min_resources={"cpu": "24", "memory": "96Gi", "nvidia.com/gpu": "6"},
            ),
        ),
    ),
    Case(
        "pytorch-definition-no-gang-without-volcano",
        src(PYTORCH, "When creating the PyTorchJob (no gang scheduling)"),
        Definition(torch(queue=None), scheduler="default"),
        (NoGang(),),
        why="the operator's gang scheduling is a cluster setting (--gang-scheduler-name); "
        "trainkit writes a schedulingPolicy exactly on Volcano clusters and reads one as the "
        "operator running with gang scheduling",
    ),
    Case(
        "pytorch-definition-elastic",
        src(
            PYTORCH, "When creating the elastic PyTorchJob / Should get the corresponding resources"
        ),
        Definition(torch(nodes=3, elastic=Elastic(min_nodes=1, max_restarts=3))),
        (
            Pods({"Worker": 3}),
            Env(
                "Worker",
                2,
                {
                    "PET_RDZV_BACKEND": "c10d",
                    "PET_NNODES": "1:3",
                    "PET_RDZV_ENDPOINT": "test-job-worker-0:23456",
                    "PET_MAX_RESTARTS": "3",
                    "RANK": ABSENT,
                    "MASTER_ADDR": ABSENT,
                },
            ),
            InitContainers("Worker", ()),
            Succeeds(("Worker",), "any", 3),
            Gang(
                "test-job",
                1,
                "q",
                min_resources={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"},
            ),
        ),
    ),
]

# --- the PodGroup (no upstream test asserts it in v1.9.4: common/job.go ReconcileJobs) -----------

PODGROUP = "pkg/controller.v1/common/job.go"


def untested(function: str) -> Source:
    return src(PODGROUP, f"{function} (no upstream test)")


def gpu_template(requests: dict[str, str] | None, limits: dict[str, str]) -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": limits}
    if requests is not None:
        resources["requests"] = requests
    return {
        "spec": {"containers": [{"name": "pytorch", "image": "test-image", "resources": resources}]}
    }


PODGROUP_CASES = [
    Case(
        "pytorch-podgroup-default-queue",
        untested("ReconcileJobs: queue 'default' when schedulingPolicy names none"),
        Manifest(
            pytorchjob(
                "test-job",
                {"Master": 1, "Worker": 2},
                runPolicy={"schedulingPolicy": {"minAvailable": 2}},
            )
        ),
        (Gang("test-job", 2, "default"),),
    ),
    Case(
        "pytorch-podgroup-min-resources-as-given",
        untested("ReconcileJobs: schedulingPolicy.minResources as given"),
        Manifest(
            pytorchjob(
                "test-job",
                {"Master": 1, "Worker": 2},
                runPolicy={
                    "schedulingPolicy": {
                        "queue": "q",
                        "minResources": {"cpu": "10"},
                        "priorityClass": "high",
                    }
                },
            )
        ),
        (Gang("test-job", 3, "q", min_resources={"cpu": "10"}, priority_class="high"),),
    ),
    Case(
        "pytorch-podgroup-min-resources-from-requests",
        untested("CalcPGMinResources (util.go AddResourceList: limits only without requests)"),
        Manifest(
            {
                **pytorchjob("test-job", {}),
                "spec": {
                    "runPolicy": {"schedulingPolicy": {"queue": "q"}},
                    "pytorchReplicaSpecs": {
                        "Master": {
                            "replicas": 1,
                            "template": gpu_template(
                                {"cpu": "1"}, {"cpu": "2", "nvidia.com/gpu": "1"}
                            ),
                        },
                        "Worker": {
                            "replicas": 1,
                            "template": gpu_template(None, {"cpu": "2", "nvidia.com/gpu": "1"}),
                        },
                    },
                },
            }
        ),
        # The Master's GPU limit is not counted: it has requests. The Worker's limits are.
        (Gang("test-job", 2, "q", min_resources={"cpu": "3", "nvidia.com/gpu": "1"}),),
    ),
]

# --- restart and failure policy (shared by every v1 kind) ----------------------------------------

RESTART_CASES = [
    Case(
        f"restart-policy-{policy.lower()}",
        src(COMMON_POD, f"TestSetRestartPolicy / {policy}"),
        Manifest(pytorchjob("test", {"Master": 1}, restart=policy)),
        (Restart("Master", pod),),
    )
    for policy, pod in (
        ("ExitCode", "Never"),
        ("Never", "Never"),
        ("Always", "Always"),
        ("OnFailure", "OnFailure"),
    )
] + [
    Case(
        "restart-policy-default-pytorch",
        src(PYTORCH, "When creating the PyTorchJob (defaults: restartPolicy OnFailure)"),
        Manifest(pytorchjob("test-job", {"Master": 1, "Worker": 1})),
        (Restart("Master", "OnFailure"), Restart("Worker", "OnFailure")),
    ),
    Case(
        "restart-policy-exitcode-definition",
        src(TRAIN_UTIL, "TestIsRetryableExitCode (ExitCode pods are recreated by the operator)"),
        Definition(torch(restart_policy="ExitCode", backoff_limit=2)),
        (Restart("Master", "Never"), Restart("Worker", "Never"), Succeeds(("Master",), "all", 2)),
    ),
    Case(
        "backoff-limit-counts",
        src(COMMON_JOB, "TestPastBackoffLimit / backOffLimit is 3"),
        Manifest(pytorchjob("test", {"Master": 1}, runPolicy={"backoffLimit": 3})),
        (Succeeds(("Master",), "all", 3),),
    ),
    Case(
        "backoff-limit-definition-default",
        src(COMMON_JOB, "TestPastBackoffLimit (trainkit always sets a limit)"),
        Definition(torch()),
        (Succeeds(("Master",), "all", 3), Restart("Master", "OnFailure")),
    ),
    Case(
        "pod-names-lower-case-type",
        src(COMMON_UTIL, "TestGenGeneralName"),
        Manifest(pytorchjob("test-job", {"Master": 1, "Worker": 2})),
        (PodNames({("Worker", 1): "test-job-worker-1", ("Master", 0): "test-job-master-0"}),),
    ),
]

# --- TFJob ---------------------------------------------------------------------------------------

TF_CONFIG_NS3 = (
    '{"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc:2222"],'
    '"ps":["test-tfjob-ps-0.ns3.svc:2222"],"worker":["test-tfjob-worker-0.ns3.svc:2222"]},'
    '"task":{"type":"worker","index":0},"environment":"cloud"}'
)

TF_CASES = [
    Case(
        "tf-local-job-has-no-tf-config",
        src(TF_POD, "Test ClusterSpec / 1 worker, 0 PS (ns0)"),
        Manifest(tfjob({"Worker": 1}, namespace="ns0"), namespace="ns0"),
        (Pods({"Worker": 1}), Env("Worker", 0, {"TF_CONFIG": ABSENT})),
    ),
    Case(
        "tf-cluster-spec-with-evaluator",
        src(TF_POD, "Test ClusterSpec / 1 worker, 1 PS, 1 evaluator (ns3, no cluster domain)"),
        Manifest(tfjob({"Worker": 1, "PS": 1, "Evaluator": 1}, namespace="ns3"), namespace="ns3"),
        (Env("Worker", 0, {"TF_CONFIG": TF_CONFIG_NS3}),),
    ),
    Case(
        "tf-cluster-spec-custom-cluster-domain",
        src(TF_POD, "Test ClusterSpec / 1 worker, 1 PS (ns2, CUSTOM_CLUSTER_DOMAIN)"),
        Manifest(tfjob({"Worker": 1, "PS": 1}, namespace="ns2"), namespace="ns2"),
        (
            Env(
                "Worker",
                0,
                {
                    "TF_CONFIG": '{"cluster":{"ps":["test-tfjob-ps-0.ns2.svc:2222"],'
                    '"worker":["test-tfjob-worker-0.ns2.svc:2222"]},'
                    '"task":{"type":"worker","index":0},"environment":"cloud"}'
                },
            ),
        ),
        why="the operator's CUSTOM_CLUSTER_DOMAIN env var is an install setting trainkit "
        "does not know; it reads the addresses of an operator without it",
    ),
    *[
        Case(
            f"tf-is-distributed-{label}",
            src(TF_POD, f"Test IsDistributed / {label}"),
            Manifest(tfjob(replicas)),
            (Env(next(iter(replicas)), 0, {"TF_CONFIG": ABSENT if local else PRESENT}),),
        )
        for label, replicas, local in (
            ("1-worker", {"Worker": 1}, True),
            ("1-worker-1-ps", {"Worker": 1, "PS": 1}, False),
            ("1-ps", {"PS": 1}, True),
            ("chief-and-worker", {"Worker": 1, "Chief": 1}, False),
        )
    ],
    *[
        Case(
            f"tf-restart-policy-{policy.lower()}",
            src(TF_POD, f"Test Restart Policy / {policy}"),
            Manifest(tfjob({"Worker": 1}, restart={"Worker": policy})),
            (Restart("Worker", pod),),
        )
        for policy, pod in (
            ("ExitCode", "Never"),
            ("Never", "Never"),
            ("Always", "Always"),
            ("OnFailure", "OnFailure"),
        )
    ],
    Case(
        "tf-restart-policy-default-never",
        src(TF_POD, "Test Restart Policy (SetDefaults_TFJob: Never)"),
        Manifest(tfjob({"Worker": 2, "PS": 1})),
        (Restart("Worker", "Never"), Restart("PS", "Never")),
    ),
    Case(
        "tf-distributed-pods",
        src(TF_CONTROLLER, "Test Normal Path / Distributed TFJob (4 workers, 2 PS) is created"),
        Manifest(tfjob({"Worker": 4, "PS": 2})),
        (
            Pods({"Worker": 4, "PS": 2}),
            PodNames({("PS", 1): "test-tfjob-ps-1", ("Worker", 3): "test-tfjob-worker-3"}),
            Port("PS", 2222, "tfjob-port"),
            Env(
                "Worker",
                3,
                {
                    "TF_CONFIG": '{"cluster":{"ps":["test-tfjob-ps-0.default.svc:2222",'
                    '"test-tfjob-ps-1.default.svc:2222"],"worker":['
                    '"test-tfjob-worker-0.default.svc:2222","test-tfjob-worker-1.default.svc:2222",'
                    '"test-tfjob-worker-2.default.svc:2222","test-tfjob-worker-3.default.svc:2222"]},'
                    '"task":{"type":"worker","index":3},"environment":"cloud"}'
                },
            ),
        ),
    ),
    Case(
        "tf-cluster-spec-port-per-type",
        src(
            "pkg/controller.v1/tensorflow/tensorflow.go",
            "genClusterSpec: each type at its own tfjob-port (no upstream test)",
        ),
        Manifest(
            {
                **tfjob({"Worker": 1}),
                "spec": {
                    "tfReplicaSpecs": {
                        "Worker": {
                            "replicas": 1,
                            "template": template("tensorflow", "tfjob-port", 2222),
                        },
                        "PS": {
                            "replicas": 1,
                            "template": template("tensorflow", "tfjob-port", 2223),
                        },
                    }
                },
            }
        ),
        (
            Env(
                "Worker",
                0,
                {
                    "TF_CONFIG": '{"cluster":{"ps":["test-tfjob-ps-0.default.svc:2223"],'
                    '"worker":["test-tfjob-worker-0.default.svc:2222"]},'
                    '"task":{"type":"worker","index":0},"environment":"cloud"}'
                },
            ),
        ),
    ),
    Case(
        "tf-local-pods",
        src(TF_CONTROLLER, "Test Normal Path / Local TFJob is created"),
        Manifest(tfjob({"Worker": 1})),
        (Pods({"Worker": 1}),),
    ),
    Case(
        "tf-chief-decides",
        src(TF_STATUS, "Test Status / Chief is succeeded, workers are failed"),
        Manifest(tfjob({"Worker": 4, "PS": 2, "Chief": 1})),
        (Succeeds(("Chief",), "all", None),),
    ),
    Case(
        "tf-worker-0-decides",
        src(
            TF_STATUS,
            "Test Status / (No chief worker) worker-0 are succeeded, 3 workers are active",
        ),
        Manifest(tfjob({"Worker": 4, "PS": 2})),
        (Succeeds(("Worker",), "first", None),),
    ),
    Case(
        "tf-all-workers-decide",
        src(
            TF_STATUS,
            "Test Status / (No chief worker, successPolicy: AllWorkers) 4 workers are succeeded",
        ),
        Manifest(tfjob({"Worker": 4}, successPolicy="AllWorkers")),
        (Succeeds(("Worker",), "all", None),),
    ),
    Case(
        "tf-backoff-limit",
        src(
            TF_JOB,
            "Test Backoff For On Failure / 4 workers each having 1 restartCount, backoffLimit 4",
        ),
        Manifest(
            tfjob(
                {"Worker": 4, "PS": 2},
                runPolicy={"backoffLimit": 4},
                restart={"Worker": "OnFailure"},
            )
        ),
        (Succeeds(("Worker",), "first", 4), Restart("Worker", "OnFailure"), Restart("PS", "Never")),
    ),
    Case(
        "tf-backoff-limit-definition",
        src(
            TF_JOB,
            "Test Backoff For On Failure / 4 workers each having 1 restartCount, backoffLimit 4",
        ),
        # Each replica type keeps its own restart policy (common/pod.go ReconcilePods).
        Definition(
            tf(
                nodes=4,
                ps=Role(replicas=2, restart_policy="Never"),
                restart_policy="OnFailure",
                backoff_limit=4,
            )
        ),
        (Succeeds(("Worker",), "first", 4), Restart("Worker", "OnFailure"), Restart("PS", "Never")),
    ),
    *[
        Case(
            f"tf-status-{label}",
            src(TF_STATUS, f"Test Status / {description}"),
            None,
            (Health(TFJOB_HEALTH, status, health),),
            kind="TFJob",
        )
        for label, description, status, health in (
            (
                "chief-succeeded",
                "Chief worker is succeeded",
                conditions(
                    "TFJob", ("Created", "True", "Created"), ("Succeeded", "True", "Succeeded")
                ),
                "Healthy",
            ),
            (
                "chief-running",
                "Chief worker is running",
                conditions("TFJob", ("Created", "True", "Created"), ("Running", "True", "Running")),
                "Progressing",
            ),
            (
                "chief-failed",
                "Chief worker is failed",
                conditions("TFJob", ("Created", "True", "Created"), ("Failed", "True", "Failed")),
                "Degraded",
            ),
            (
                "chief-restarting",
                "Chief is failed and restarting",
                conditions(
                    "TFJob",
                    ("Created", "True", "Created"),
                    ("Running", "False", "Running"),
                    ("Restarting", "True", "Restarting"),
                ),
                "Progressing",
            ),
        )
    ],
    Case(
        "tf-definition-chief-ps-workers",
        src(TF_CONTROLLER, "Test Normal Path / Distributed TFJob (4 workers, 2 PS) is created"),
        Definition(tf(nodes=4, ps=Role(replicas=2), chief=Role())),
        (
            Pods({"Chief": 1, "PS": 2, "Worker": 4}),
            Env(
                "PS",
                1,
                {
                    "TF_CONFIG": '{"cluster":{"chief":["test-tfjob-chief-0.t.svc:2222"],'
                    '"ps":["test-tfjob-ps-0.t.svc:2222","test-tfjob-ps-1.t.svc:2222"],'
                    '"worker":["test-tfjob-worker-0.t.svc:2222","test-tfjob-worker-1.t.svc:2222",'
                    '"test-tfjob-worker-2.t.svc:2222","test-tfjob-worker-3.t.svc:2222"]},'
                    '"task":{"type":"ps","index":1},"environment":"cloud"}'
                },
            ),
            Succeeds(("Chief",), "all", 3),
            Gang("test-tfjob", 7, "q"),
        ),
    ),
    Case(
        "tf-definition-local-job",
        src(TF_POD, "Test ClusterSpec / 1 worker, 0 PS (ns0)"),
        Definition(tf(nodes=1)),
        (
            Pods({"Worker": 1}),
            Env("Worker", 0, {"TF_CONFIG": ABSENT}),
            Restart("Worker", "OnFailure"),
        ),
    ),
]

# --- PaddleJob -----------------------------------------------------------------------------------

PADDLE_CASES = [
    Case(
        "paddle-master-rendezvous",
        src(PADDLE, "When creating the PaddleJob / Should get the corresponding resources"),
        Manifest(paddlejob({"Master": 1, "Worker": 2}), namespace="paddle-test"),
        (
            Pods({"Master": 1, "Worker": 2}),
            PodNames({("Master", 0): "test-job-master-0", ("Worker", 0): "test-job-worker-0"}),
            Port("Master", 8080, "master"),
            Env(
                "Master",
                0,
                {
                    "PADDLE_MASTER": "$(POD_IP_DUMMY):8080",
                    "POD_IP_DUMMY": FieldRef("status.podIP"),
                },
            ),
            Succeeds(("Master",), "all", None),
            Restart("Master", "OnFailure"),
        ),
    ),
    Case(
        "paddle-suspended",
        src(PADDLE, "Shouldn't create resources if PaddleJob is suspended"),
        None,
        (
            Health(
                PADDLE_HEALTH,
                conditions(
                    "PaddleJob", ("Created", "True", "Created"), ("Suspended", "True", "Suspended")
                ),
                "Suspended",
            ),
        ),
        kind="PaddleJob",
    ),
    Case(
        "paddle-resumed",
        src(PADDLE, "Should resume PaddleJob after PaddleJob is unsuspended"),
        None,
        (
            Health(
                PADDLE_HEALTH,
                conditions(
                    "PaddleJob",
                    ("Created", "True", "Created"),
                    ("Suspended", "False", "Resumed"),
                    ("Running", "True", "Running"),
                ),
                "Progressing",
            ),
        ),
        kind="PaddleJob",
    ),
    Case(
        "paddle-succeeded",
        src(
            PADDLE, "When creating the PaddleJob / Should get the corresponding resources (status)"
        ),
        None,
        (
            Health(
                PADDLE_HEALTH,
                conditions(
                    "PaddleJob", ("Created", "True", "Created"), ("Succeeded", "True", "Succeeded")
                ),
                "Healthy",
            ),
        ),
        kind="PaddleJob",
    ),
    Case(
        "paddle-definition-collective",
        src(PADDLE, "When creating the PaddleJob / Should get the corresponding resources"),
        Definition(paddle(nodes=3)),
        (
            Pods({"Worker": 3}),
            Port("Worker", 36543, "master"),
            Env(
                "Worker",
                0,
                {
                    "PADDLE_MASTER": "$(POD_IP_DUMMY):36543",
                    "POD_IP_DUMMY": FieldRef("status.podIP"),
                    "PADDLE_NNODES": "3",
                    "PADDLE_JOB_ID": "test-job",
                },
            ),
            Env(
                "Worker",
                2,
                {"PADDLE_MASTER": "test-job-worker-0:36543", "POD_IP_DUMMY": ABSENT},
            ),
            Succeeds(("Worker",), "all", 3),
            Gang(
                "test-job",
                3,
                "q",
                min_resources={"cpu": "24", "memory": "96Gi", "nvidia.com/gpu": "6"},
            ),
        ),
    ),
    Case(
        "paddle-definition-parameter-servers",
        src(PADDLE, "When creating the PaddleJob / Should get the corresponding resources"),
        Definition(
            paddle(
                nodes=2, mode="ps", ps=Role(replicas=2, resources=Resources(cpu=4, memory="8Gi"))
            )
        ),
        (
            Pods({"Master": 2, "Worker": 2}),
            Env(
                "Master",
                0,
                {"PADDLE_MASTER": "$(POD_IP_DUMMY):36543", "PADDLE_SERVER_NUM": "1"},
            ),
            Env(
                "Master",
                1,
                {"PADDLE_MASTER": "test-job-master-0:36543", "POD_IP_DUMMY": ABSENT},
            ),
            Env("Worker", 1, {"PADDLE_TRAINER_NUM": "1", "PADDLE_NNODES": "4"}),
            Succeeds(("Master",), "all", 3),
        ),
    ),
]

CASES = [*PYTORCH_CASES, *PODGROUP_CASES, *RESTART_CASES, *TF_CASES, *PADDLE_CASES]
