"""Container lifecycle hooks (post_start, pre_stop): on the job's container of every kind with
pods, shown by explain; a pre_stop sleep must leave the program time to stop."""

from __future__ import annotations

import re

import pytest

from example_edits import edit, generated_docs
from shared_tree import keep_only
from trainkit import Hook, PyTorchJob, Resources
from trainkit.kube.pods import pod_specs
from trainkit.model.messages import ModelError

RES = Resources(cpu=1, memory="1Gi")
WIDE_DEEP = "jobs/vision/wide_deep_ps.py"
KINDS = {
    "PyTorchJob": ("jobs/vision/resnet50_ddp.py", "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "MPIJob": ("jobs/llm/llama_pretrain_deepspeed.py", "mpijob-llama-pretrain-deepspeed-r6.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
}
HOOKS = (
    'ports={"admin": 8082}, termination_grace_period=60, '
    'post_start=Hook(http_get="/started", port="admin"), pre_stop=Hook(sleep=10),'
)


def add_fields(ws, rel: str, fields: str) -> None:
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    text = re.sub(
        r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
    )
    path.write_text(text, encoding="utf-8")


def test_hooks_reach_the_job_s_container_on_every_kind_and_explain_shows_them(ws, cli, crds):
    # The platform and one job of each kind: the other examples add nothing here but their
    # synth and check.
    keep_only(ws, [rel for rel, _ in KINDS.values()])
    for rel, _ in KINDS.values():
        add_fields(ws, rel, HOOKS)
        edit(ws, rel, "from trainkit import", "from trainkit import Hook,")
    run = cli("synth")
    assert run.code == 0, run.err
    want = {
        "postStart": {"httpGet": {"path": "/started", "port": "admin"}},
        "preStop": {"sleep": {"seconds": 10}},
    }
    for kind, (_, name) in KINDS.items():
        seen = 0
        for doc in generated_docs(ws, name):
            for path, spec in pod_specs(doc):
                c = spec["containers"][0]
                if "submitterPodTemplate" in path or (kind, path[-3]) == ("MPIJob", "Launcher"):
                    assert "lifecycle" not in c, (kind, path)
                    continue
                assert c["lifecycle"] == want, (kind, path)
                seen += 1
        assert seen, kind
    run = cli("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert "    started    GET :admin/started\n    pre-stop   sleeps 10 s\n" in run.out, run.out
    assert cli("check", "--crds", str(crds)).code == 0


def test_paddle_operator_has_no_sleep_hook(ws, cli) -> None:
    add_fields(ws, WIDE_DEEP, "pre_stop=Hook(sleep=5),")
    edit(ws, WIDE_DEEP, "from trainkit import (", "from trainkit import (\n    Hook,")
    run = cli("synth")
    assert run.code == 1
    assert (
        "PaddleJob 'wide-deep-ps': pre_stop.sleep: on cluster 'rocm-west' (paddle-operator): "
        "paddle-operator's CRD has no sleep hook"
    ) in run.err, run.err


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"pre_stop": Hook(sleep=30)},
         "pre_stop sleeps 30 s but the pod's grace period is 30 s: the kubelet runs the hook "
         "within the grace period and sends SIGTERM only after it, with at most 2 s left, so "
         "the program could not stop cleanly (write its checkpoint); sleep less than "
         "termination_grace_period, or raise termination_grace_period"),
        ({"pre_stop": Hook(sleep=100), "termination_grace_period": 90},
         "pre_stop sleeps 100 s but the pod's grace period is 90 s"),
        ({"post_start": Hook(http_get="/", port="web")},
         "post_start calls port 'web', which ports does not name (it names none); add it to "
         "ports, or give the number"),
    ],
)  # fmt: skip
def test_each_bad_hook_use_is_refused(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        PyTorchJob(name="x", image="i", command=["python"], resources=RES, **fields)
    assert says in str(err.value), str(err.value)


def test_a_sleep_shorter_than_the_grace_period_and_other_hooks_pass() -> None:
    job = PyTorchJob(
        name="x", image="i", command=["python"], resources=RES, pre_stop=Hook(sleep=29),
        post_start=Hook(exec=["sh", "-c", "nvidia-smi -L"]),
    )  # fmt: skip
    assert job.pre_stop is not None
    assert job.pre_stop.render() == {"sleep": {"seconds": 29}}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({}, "a hook does one thing, and this one gives none; give exactly one of exec=[…], "
         "http_get='/path' (with port=), sleep=seconds"),
        ({"exec": ["x"], "sleep": 1}, "this one gives exec, sleep"),
        ({"exec": []}, "exec is empty"),
        ({"sleep": 5, "port": 80}, "a sleep hook takes no port; drop port="),
        ({"http_get": "/"}, "an http_get hook needs port=, a number or a name of ports"),
        ({"http_get": "stop", "port": 80}, "'stop' is not an HTTP path: start with '/'"),
        ({"http_get": "/", "port": 80, "host": "10.0.0.1"}, "host"),
        ({"tcp_socket": True, "port": 80}, "tcp_socket"),
        ({"sleep": 0}, "sleep: must be at least 1"),
    ],
)  # fmt: skip
def test_each_bad_hook_is_refused(fields, says) -> None:
    with pytest.raises(ModelError) as err:
        Hook(**fields)
    assert says in str(err.value), str(err.value)


def test_a_ray_worker_group_s_own_pre_stop_spends_the_same_grace_period() -> None:
    from trainkit import RayJob, WorkerGroup

    with pytest.raises(ModelError) as err:
        RayJob(
            name="x", image="i", command=["python"], head=RES, termination_grace_period=20,
            workers=[WorkerGroup(name="w", resources=RES, pre_stop=Hook(sleep=20))],
        )  # fmt: skip
    assert ("workers[0].pre_stop sleeps 20 s but the pod's grace period is 20 s") in str(
        err.value
    ), str(err.value)
