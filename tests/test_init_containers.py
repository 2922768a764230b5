"""Init containers and native sidecars: on every pod that runs the job's code, held to the job's
container's rules, counted as the scheduler counts them; never a classic sidecar."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from example_edits import edit, generated_docs
from example_refusals import refusals
from shared_tree import keep_only
from trainkit import DefinitionError, InitContainer, PyTorchJob, Resources
from trainkit.effective.podsets import pod_requests
from trainkit.kube.pods import pod_specs

TEAMS = "jobs/platform/teams.py"
POLICY = "jobs/platform/policy.py"
RESNET = "jobs/vision/resnet50_ddp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
WIDE_DEEP = "jobs/vision/wide_deep_ps.py"
RES = Resources(cpu=1, memory="1Gi")

INITS = (
    "init_containers=[InitContainer(name='fetch', command=['sh', '-c', 'cp -r /data /scratch'], "
    "env={'SHARD': '3'}, mounts=['scratch'], resources=Resources(cpu=4, memory='8Gi')), "
    "InitContainer(name='metrics', image='registry.example.com/ml/exporter:1', "
    "command=['exporter'], sidecar=True, resources=Resources(cpu=1, memory='512Mi'))], "
    "volumes=[EmptyDir(name='scratch', path='/scratch', size='10Gi')],"
)
KINDS = {
    "PyTorchJob": ("jobs/vision/resnet50_ddp.py", "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "XGBoostJob": ("jobs/vision/photo_quality_xgboost.py", "xgboostjob-photo-quality-xgb-r3.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "MPIJob": (DEEPSPEED, "mpijob-llama-pretrain-deepspeed-r6.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
}


def add_fields(ws, rel: str, fields: str) -> None:
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    if "    volumes=[" in text:  # the job's own claims stay
        inits, volumes = fields.split("volumes=[")
        text = text.replace("    volumes=[", "    volumes=[" + volumes.removesuffix("],") + ", ")
        fields = inits
    text = re.sub(
        r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
    )
    path.write_text("from trainkit import EmptyDir, InitContainer\n" + text, encoding="utf-8")


def test_every_kind_runs_them_in_the_pods_that_run_its_code(ws, cli) -> None:
    # The platform and one job of each kind: the other examples would add nothing here but
    # their synth and check.
    keep_only(ws, [rel for rel, _ in KINDS.values()])
    for rel, _ in KINDS.values():
        add_fields(ws, rel, INITS)
    run = cli("synth")
    assert run.code == 0, run.err
    for kind, (_, name) in KINDS.items():
        for doc in generated_docs(ws, name):
            checked = 0
            for path, spec in pod_specs(doc):
                inits = spec.get("initContainers") or []
                if (kind, path[-3]) == ("MPIJob", "Launcher") or "submitterPodTemplate" in path:
                    # A launcher that runs no ranks, and KubeRay's submitter, get none.
                    assert [c["name"] for c in inits] in ([], ["wait-for-hosts"]), (kind, path)
                    continue
                fetch, metrics = inits
                assert fetch["name"] == "fetch" and "restartPolicy" not in fetch
                assert fetch["image"] == spec["containers"][0]["image"]  # the job's
                assert fetch["command"] == ["sh", "-c", "cp -r /data /scratch"]
                assert fetch["env"][0] == {"name": "SHARD", "value": "3"}
                assert fetch["resources"]["requests"] == fetch["resources"]["limits"]
                assert fetch["volumeMounts"] == [{"mountPath": "/scratch", "name": "scratch"}]
                assert metrics["restartPolicy"] == "Always"
                assert metrics["image"] == "registry.example.com/ml/exporter:1"
                assert "volumeMounts" not in metrics
                checked += 1
            assert checked, kind
    # A GPU-less init container on a CUDA cluster sees no GPU of the node.
    (job, *_) = generated_docs(ws, KINDS["PyTorchJob"][1])
    fetch = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["initContainers"][0]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""} in fetch["env"]
    run = cli("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert run.code == 0, run.err
    assert (
        "    init       fetch (registry.example.com/ml/pytorch:2.5.1-cuda12.4), before it starts; "
        "limits cpu 4, memory 8Gi\n"
        "    sidecar    metrics (registry.example.com/ml/exporter:1), beside the job's container; "
        "limits cpu 1, memory 512Mi\n"
    ) in run.out, run.out
    assert cli("check").code == 0


def test_the_pods_requests_count_them_as_the_scheduler_does() -> None:
    def c(cpu: int, *, sidecar: bool = False) -> dict:
        out: dict = {"resources": {"requests": {"cpu": str(cpu)}}}
        if sidecar:
            out["restartPolicy"] = "Always"
        return out

    # k8s.io/component-helpers resource.PodRequests: containers plus sidecars, or an init
    # container beside the sidecars started before it, whichever is more.
    assert pod_requests([c(4)], [c(1, sidecar=True), c(2)]) == {"cpu": Decimal(5)}
    assert pod_requests([c(4)], [c(1, sidecar=True), c(6)]) == {"cpu": Decimal(7)}
    assert pod_requests([c(4)], [c(6), c(1, sidecar=True)]) == {"cpu": Decimal(6)}
    assert pod_requests([c(4)], [c(3), c(2, sidecar=True), c(3, sidecar=True)]) == {
        "cpu": Decimal(9)
    }
    assert pod_requests([c(4)], [c(8)]) == {"cpu": Decimal(8)}


def test_the_gang_and_the_queue_count_what_volcano_places(ws, cli) -> None:
    # vision's queue holds 256 CPUs; two nodes of 32 CPUs fit, with a 100-CPU sidecar each not.
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', init_containers=[__import__('trainkit').InitContainer(name='big', "
        "command=['x'], sidecar=True, resources=__import__('trainkit').Resources(cpu=100, "
        "memory='1Gi'))],",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "PyTorchJob 'resnet50-ddp': queue: the gang of 2 pods needs 264 cpu on cluster "
        "'gpu-east', but queue 'vision' can hold at most 256 cpu"
    ) in err, err
    edit(ws, RESNET, "cpu=100", "cpu=10")
    run = cli("synth")
    assert run.code == 0, run.err
    run = cli("explain", "resnet50-ddp", "--cluster", "gpu-east", "--format", "json")
    (job,) = json.loads(run.out)["jobs"]
    # minResources is the operator's (containers only); what Volcano places is more.
    assert job["podgroup"]["requests"]["cpu"] == "64"


def test_a_classic_sidecar_from_a_platform_patch_is_refused(ws) -> None:
    (ws.root / "jobs/platform/patches.py").write_text(
        "from trainkit import PatchOp, PlatformPatch\n"
        "sidecar = PlatformPatch(name='log-shipper', object_kind='PyTorchJob', object_name='resnet50-ddp', ops=[\n"
        "    PatchOp(op='add', path='/spec/pytorchReplicaSpecs/Worker/template/spec/containers/-',\n"
        "            value={'name': 'shipper', 'image': 'registry.example.com/ml/x:1'})])\n",
        encoding="utf-8",
    )
    err = refusals(ws)
    assert (
        "the Worker pods run container 'shipper' beside the job's: a second container keeps "
        "each pod Running after training ends, so the job never completes and keeps its GPUs; "
        "make it a native sidecar, InitContainer(sidecar=True)"
    ) in err, err
    assert "PlatformPatch 'log-shipper'" in err, err


def test_a_burstable_init_container_needs_the_policy(ws) -> None:
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', init_containers=[__import__('trainkit').InitContainer(name='fetch', "
        "command=['x'], resources=__import__('trainkit').Resources(cpu=2, cpu_request=1, "
        "memory='1Gi'))],",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "PyTorchJob 'resnet50-ddp': init_containers[0].resources.cpu_request: a cpu request "
        "below the limit makes the pods Burstable"
    ) in err, err


def test_an_unlisted_registry_is_refused_for_an_init_container(ws) -> None:
    edit(
        ws, RESNET, 'queue="vision",',
        "queue='vision', init_containers=[__import__('trainkit').InitContainer(name='fetch', "
        "image='docker.io/evil/miner:1', command=['x'], "
        "resources=__import__('trainkit').Resources(cpu=1, memory='1Gi'))],",
    )  # fmt: skip
    err = refusals(ws)
    assert "docker.io/evil/miner:1" in err, err


def test_paddle_operator_cannot_carry_a_sidecar_or_an_apparmor_profile(ws) -> None:
    edit(ws, WIDE_DEEP, 'mounts=["scratch"],', 'mounts=["scratch"], sidecar=True,')
    edit(
        ws,
        WIDE_DEEP,
        'seccomp="RuntimeDefault",',
        'seccomp="RuntimeDefault", app_armor="RuntimeDefault",',
    )
    err = refusals(ws)
    assert (
        "PaddleJob 'wide-deep-ps': init_containers[0]: on cluster 'rocm-west' (paddle-operator): "
        "paddle-operator's CRD has no init container restartPolicy, so the API server would "
        "drop sidecar=True and the pod would wait for it forever"
    ) in err, err
    assert (
        "PaddleJob 'wide-deep-ps': security_context.app_armor: on cluster 'rocm-west' "
        "(paddle-operator): paddle-operator's CRD has no appArmorProfile"
    ) in err, err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"name": "pytorch"},
            "name 'pytorch' is taken by a container trainkit or the operator adds",
        ),
        ({"name": "init-pytorch"}, "name 'init-pytorch' is taken"),
        ({"command": []}, "command: "),
        (
            {"resources": {"cpu": 1, "memory": "1Gi", "gpu": 1}},
            "resources.gpu is 1: GPUs belong to the job's container",
        ),
        ({"env": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "env sets NVIDIA_VISIBLE_DEVICES"),
        ({"env": {"CUDA_VISIBLE_DEVICES": "0"}}, "env sets CUDA_VISIBLE_DEVICES"),
        ({"mounts": ["a", "a"]}, "mounts lists 'a' twice"),
        ({"image": "bad image"}, "'bad image' is not an image reference"),
        ({"privileged": True}, "privileged: unknown field"),
    ],
)
def test_bad_init_containers_are_refused_with_why(fields: dict, message: str) -> None:
    base = {"name": "fetch", "command": ["x"], "resources": RES, **fields}
    with pytest.raises(DefinitionError) as e:
        InitContainer(**base)
    assert message in str(e.value), str(e.value)


def test_a_job_checks_its_init_containers_names_and_mounts() -> None:
    one = InitContainer(name="a", command=["x"], resources=RES)
    with pytest.raises(DefinitionError, match="two init containers are named 'a'"):
        PyTorchJob(name="j", image="i:1", command=["x"], resources=RES, init_containers=[one, one])
    with pytest.raises(DefinitionError) as e:
        PyTorchJob(
            name="j", image="i:1", command=["x"], resources=RES,
            init_containers=[InitContainer(name="a", command=["x"], resources=RES, mounts=["data"])],
        )  # fmt: skip
    assert (
        "init container 'a' mounts 'data', which is none of the job's volumes (none); add it to "
        "volumes or drop it from mounts"
    ) in str(e.value)
