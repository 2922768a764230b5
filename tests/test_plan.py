import pytest

from trainkit import DefinitionError
from trainkit.load import load_jobs
from trainkit.resolve import build_plan
from trainkit.synth import check_cluster_truth, render_groups


def plan(ws):
    return build_plan(load_jobs(ws.jobs, ws.root).definitions)


def problems(ws) -> list[str]:
    """Problems of the plan, and of the pods it becomes (GPUs per node are the cluster's)."""
    with pytest.raises(DefinitionError) as exc:
        p = plan(ws)
        check_cluster_truth(p, render_groups(p))
    return [str(p) for p in exc.value.problems]


def with_job(ws, body: str) -> None:
    ws.write(
        "jobs/vision/extra.py",
        "from trainkit import PyTorchJob, Resources\n\n"
        f"j = PyTorchJob(name='extra', image='i:1', command=['python', 'x.py'], {body})\n",
    )


def test_jobs_are_placed_per_cluster_with_the_team_queue(bare):
    p = plan(bare)
    by_cluster = {cp.cluster.name: cp for cp in p.clusters}
    assert sorted(by_cluster) == ["east", "plain", "west"]
    (east_job,) = by_cluster["east"].jobs
    assert (east_job.namespace, east_job.queue) == ("vision", "research")
    assert by_cluster["plain"].jobs == ()
    assert [ns for ns, _, _ in by_cluster["plain"].namespaces] == ["vision"]


def test_default_scheduler_clusters_get_no_queue(bare):
    with_job(bare, "resources=Resources(cpu=1, memory='1Gi', gpu=2), clusters=['plain']")
    by_cluster = {cp.cluster.name: cp for cp in plan(bare).clusters}
    assert by_cluster["plain"].jobs[0].queue is None
    # A queue without clusters= exists where Volcano does: a Queue object on 'plain' would
    # name a kind its API server does not serve, and Argo CD could not sync the cluster.
    assert [pq.queue.name for pq in by_cluster["east"].queues] == ["research"]
    assert by_cluster["plain"].queues == ()


def test_a_queue_named_on_a_cluster_without_volcano_is_refused(bare):
    bare.write(
        "jobs/platform/more.py",
        "from trainkit import Queue\n\nextra = Queue(name='extra', clusters=['east', 'plain'])\n",
    )
    assert problems(bare) == [
        "jobs/platform/more.py:3: Queue 'extra': clusters[1]: cluster 'plain' schedules with "
        "kube-scheduler (Cluster.scheduler='default') and has no Volcano queues; remove it from "
        "the Queue's clusters, or set scheduler='volcano' on the Cluster in "
        "jobs/platform/platform.py"
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "resources=Resources(cpu=1, memory='1Gi', gpu=12), clusters=['east']",
            "jobs/vision/extra.py:3: PyTorchJob 'extra': resources.gpu: 12 exceeds the 8 GPUs "
            "per node of cluster 'east'",
        ),
        (
            "resources=Resources(cpu=1, memory='1Gi'), clusters=['north']",
            "PyTorchJob 'extra': clusters[0]: unknown cluster 'north'; defined clusters: "
            "'east', 'plain', 'west'",
        ),
        (
            "resources=Resources(cpu=1, memory='1Gi'), queue='nlp', clusters=['east']",
            "PyTorchJob 'extra': queue: team 'vision' may not use queue 'nlp'; its queues: "
            "'research'",
        ),
        (
            "resources=Resources(cpu=1, memory='1Gi', gpu=2), procs_per_node=4, clusters=['east']",
            "procs_per_node: 4 processes per node but only 2 GPUs",
        ),
        (
            "name='ddp', resources=Resources(cpu=1, memory='1Gi'), clusters=['east']",
            "another PyTorchJob named 'ddp' runs in namespace 'vision' on cluster 'east'",
        ),
    ],
)
def test_reference_errors_name_file_object_field_and_what_exists(bare, body, expected):
    if "name='ddp'" in body:
        body = body.replace("name='ddp', ", "")
        bare.write(
            "jobs/vision/extra.py",
            "from trainkit import PyTorchJob, Resources\n\n"
            f"j = PyTorchJob(name='ddp', image='i:1', command=['x'], {body})\n",
        )
    else:
        with_job(bare, body)
    found = problems(bare)
    assert any(expected in p for p in found), found


def test_undeclared_team_directory(bare):
    bare.write(
        "jobs/nlp/bert.py",
        "from trainkit import PyTorchJob, Resources\n"
        "j = PyTorchJob(name='bert', image='i', command=['x'], "
        "resources=Resources(cpu=1, memory='1Gi'))\n",
    )
    (msg,) = problems(bare)
    assert "team 'nlp' (directory jobs/nlp/) is not declared" in msg
    assert "add Team(name='nlp'" in msg


def test_platform_reference_errors_are_all_reported(bare):
    bare.write(
        "jobs/platform/bad.py",
        "from trainkit import Queue, Team, Cluster\n"
        "a = Queue(name='a', parent='b')\n"
        "b = Queue(name='b', parent='a')\n"
        "c = Queue(name='c', parent='ghost', clusters=['mars'])\n"
        "t = Team(name='nlp', namespace='vision', queues=['nope'])\n"
        "dup = Cluster(name='east', server='https://e2', gpus_per_node=1)\n",
    )
    found = "\n".join(problems(bare))
    assert "queue parents form a cycle: a → b → a" in found
    assert "unknown parent queue 'ghost'" in found
    assert "clusters[0]: unknown cluster 'mars'" in found
    assert "namespace 'vision' already belongs to team 'nlp' (jobs/platform/bad.py:5)" in found
    assert "queues[0]: unknown queue 'nope'" in found
    assert "duplicate Cluster name" in found


def test_queue_parents_come_before_children(bare):
    bare.write(
        "jobs/platform/tree.py",
        "from trainkit import Capacity, Queue\n"
        "leaf = Queue(name='leaf', parent='mid', deserved=Capacity(gpu=1))\n"
        "mid = Queue(name='mid', parent='top', deserved=Capacity(gpu=1))\n"
        "top = Queue(name='top', deserved=Capacity(gpu=1))\n",
    )
    east = plan(bare).clusters[0]
    assert [(q.queue.name, q.depth) for q in east.queues] == [
        ("research", 0),
        ("top", 0),
        ("mid", 1),
        ("leaf", 2),
    ]


def test_queue_missing_on_a_cluster_of_the_job(bare):
    bare.write(
        "jobs/platform/platform.py",
        (bare.root / "jobs/platform/platform.py")
        .read_text()
        .replace('Queue(name="research",', 'Queue(name="research", clusters=["east"],'),
    )
    found = problems(bare)
    assert any("queue 'research' does not exist on cluster 'west'" in p for p in found), found


def test_a_job_without_script_or_command_runs_the_image_entrypoint(bare):
    bare.write(
        "jobs/vision/entry.py",
        "from trainkit import PyTorchJob, Resources\n\n"
        "j = PyTorchJob(name='entry', image='i:1', args=['--epochs', '1'], nodes=2,\n"
        "               resources=Resources(cpu=1, memory='1Gi', gpu=2), clusters=['east'])\n",
    )
    p = plan(bare)
    (spec,) = [
        r.body["spec"]
        for _, group in render_groups(p)
        for r in group
        if r.body.get("kind") == "PyTorchJob" and r.body["metadata"]["name"] == "entry"
    ]
    for role in ("Master", "Worker"):
        (c,) = spec["pytorchReplicaSpecs"][role]["template"]["spec"]["containers"]
        assert "command" not in c and "workingDir" not in c
        assert c["args"] == ["--epochs", "1"]
    # The operator's auto: WORLD_SIZE = nodes, the entrypoint starts its own processes.
    assert "nprocPerNode" not in spec
