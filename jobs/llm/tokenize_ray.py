"""Tokenizing a corpus on a small CPU Ray cluster (KubeRay RayJob), submitted by KubeRay's
light-weight submitter: a Go binary in a pod of 256 MiB instead of a Ray image's Python. The
head's Service gets a fixed name and an internal load balancer (reachable from the company's
network, not the internet) for the team's dashboard bookmarks."""

from trainkit import HeadService, RayJob, Resources, Role, RuntimeEnv, WorkerGroup

job = RayJob(
    name="tokenize-ray",
    run=1,  # the head Service became a load balancer: KubeRay creates it once
    image="registry.example.com/ml/ray:2.60.0-py311-cu124",
    command=["python", "-m", "data.tokenize", "--shards", "64"],
    head=Resources(cpu=4, memory="16Gi"),
    workers=[WorkerGroup(name="cpu", nodes=2, resources=Resources(cpu=8, memory="32Gi"))],
    runtime_env=RuntimeEnv(pip=["tiktoken==0.8.0"]),
    # trainkit writes its arguments: the runtime env, then -- and the entrypoint
    submitter=Role(
        image="registry.example.com/ml/kuberay-submitter:v1.5.1",
        command=["/submitter"],
        resources=Resources(cpu=1, memory="256Mi"),
    ),
    submitter_backoff_limit=1,  # it resumes a submitted job rather than submitting it again
    head_service=HeadService(
        name="tokenize-dashboard",
        type="LoadBalancer",  # granted in jobs/platform/teams.py, as is the annotation
        annotations={"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"},
    ),
    queue="llm",
    clusters=["gpu-east"],
    labels={"example.com/pipeline": "tokenize"},  # KubeRay copies it to the RayCluster
)
