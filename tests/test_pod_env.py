"""Env from the pod itself (downward API), optional keys, and ``$(VAR)`` references checked as
the kubelet expands them."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from example_edits import edit
from example_refusals import refusals
from shared_tree import SharedTree, keep_only
from trainkit import ConfigMapKey, MPIJob, PodField, PyTorchJob, ResourceField, Resources
from trainkit.kube.expansion import references
from trainkit.kube.pods import pod_specs
from trainkit.model.messages import ModelError

TEAMS = "jobs/platform/teams.py"
RUNTIMES = "jobs/platform/runtimes.py"
RESNET = "jobs/vision/resnet50_ddp.py"
DEEPSPEED = "jobs/llm/llama_pretrain_deepspeed.py"
SFT = "jobs/llm/llama_sft_trainjob.py"
DS_TRAINJOB = "jobs/llm/llama_pretrain_deepspeed_trainjob.py"
RES = Resources(cpu=1, memory="1Gi")
KINDS = {
    "PyTorchJob": ("jobs/vision/resnet50_ddp.py", "pytorchjob-resnet50-ddp.yaml"),
    "TFJob": ("jobs/vision/mobilenet_ps.py", "tfjob-mobilenet-ps-r1.yaml"),
    "PaddleJob": ("jobs/vision/resnet_paddle.py", "paddlejob-resnet-paddle.yaml"),
    "XGBoostJob": ("jobs/vision/photo_quality_xgboost.py", "xgboostjob-photo-quality-xgb-r3.yaml"),
    "JAXJob": ("jobs/llm/bigram_jax.py", "jaxjob-bigram-jax.yaml"),
    "RayJob": ("jobs/llm/lr_sweep_ray.py", "rayjob-lr-sweep-ray-r3.yaml"),
    "TrainJob": (SFT, "trainjob-llama-sft-r1.yaml"),
}
REFS = (
    'env_refs={"MY_POD_IP": PodField(path="status.podIP"), '
    '"MEM_MIB": ResourceField(resource="limits.memory", divisor="1Mi")},'
)


def add_fields(ws, rel: str, fields: str, imports: str = "PodField, ResourceField") -> None:
    path = ws.root / rel
    text = path.read_text(encoding="utf-8")
    text = re.sub(
        r'(\n    name="[^"]+",\n)', lambda m: m.group(1) + f"    {fields}\n", text, count=1
    )
    path.write_text(f"from trainkit import {imports}\n" + text, encoding="utf-8")


def line_of(ws, rel: str, needle: str) -> int:
    lines = (ws.root / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


# --- the downward API ---------------------------------------------------------------------


OPTIONAL = '"DATA": ConfigMapKey(config_map="datasets", key="path", optional=True)'
GRANT = 'vision = Team(name="vision", config_maps={"datasets": ["path"]},'


@pytest.fixture(scope="module")
def tree(module_ws, module_cli) -> SharedTree:
    """The downward API's fields on one job of every kind; resnet50-ddp also reads an optional
    key its team is granted (the optional keys' test): synthesized once, each test reads its
    own."""
    ws = module_ws
    keep_only(ws, [rel for rel, _ in KINDS.values()])
    for rel, _ in KINDS.values():
        if "env_refs={" in (ws.root / rel).read_text(encoding="utf-8"):  # the XGBoost example
            edit(ws, rel, "env_refs={", REFS.removesuffix("},") + ",")
        else:
            add_fields(ws, rel, REFS)
    edit(ws, RESNET, "env_refs={", "env_refs={" + OPTIONAL + ", ")
    edit(ws, RESNET, "from trainkit import PodField", "from trainkit import ConfigMapKey, PodField")
    edit(ws, TEAMS, 'vision = Team(name="vision",', GRANT)
    return SharedTree.synthesized(ws, module_cli)


def test_pod_and_resource_fields_reach_the_job_s_container_on_every_kind(tree, crds) -> None:
    expected = [
        {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {
            "name": "MEM_MIB",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
        },
    ]
    for kind, (_, name) in KINDS.items():
        for doc in tree.docs(name):
            if kind == "TrainJob":
                env = doc["spec"]["trainer"]["env"]
                assert all(e in env for e in expected), env
                continue
            checked = 0
            for path, spec in pod_specs(doc):
                if "submitterPodTemplate" in path:
                    continue  # KubeRay's submitter runs `ray job submit`, not the job's code
                env = spec["containers"][0]["env"]
                assert all(e in env for e in expected), (kind, path, env)
                checked += 1
            assert checked, kind
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east", "--format", "json")
    assert run.code == 0, run.err
    (explained,) = json.loads(run.out)["jobs"]
    env = {e["name"]: e for e in explained["pods"][0]["env"]}
    assert env["MY_POD_IP"]["from"] == "the pod's status.podIP"
    assert env["MEM_MIB"]["from"] == "the container's limits.memory in units of 1Mi"
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert "MY_POD_IP" in run.out and "<the pod's status.podIP>  (job)" in run.out, run.out
    run = tree.run("check", "--crds", str(crds))
    assert run.code == 0, run.err


@pytest.mark.parametrize(
    "path",
    [
        "metadata.name",
        "spec.nodeName",
        "status.hostIPs",
        "metadata.labels['example.com/tier']",
        "metadata.annotations['Example.com/Owner']",  # lowercased before it is checked
    ],
)
def test_every_field_path_the_kubelet_gives_env_is_accepted(path: str) -> None:
    assert PodField(path=path).path == path


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (
            "status.phase",
            "'status.phase' is not a field the kubelet gives a variable; use one of "
            "metadata.name, metadata.namespace, metadata.uid, spec.nodeName",
        ),
        ("metadata.labels", "or one label or annotation: \"metadata.labels['key']\""),
        ("spec.containers[0].image", "is not a field the kubelet gives a variable"),
        ("metadata.labels['-bad']", "'-bad' in \"metadata.labels['-bad']\" is not a label or"),
        ("metadata.labels['']", "is not a field the kubelet gives a variable"),
    ],
)
def test_a_field_path_the_api_server_refuses_is_refused(path: str, says: str) -> None:
    with pytest.raises(ModelError) as err:
        PodField(path=path)
    assert says in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("resource", "divisor", "says"),
    [
        ("limits.cpu", "1Mi", "divisor '1Mi' is not one the API server accepts for limits.cpu; "
         "use one of 1m, 1"),
        ("requests.memory", "1m", "accepts for requests.memory; use one of 1, 1k, 1M"),
        ("limits.ephemeral-storage", "2Gi", "divisor '2Gi' is not one"),
    ],
)  # fmt: skip
def test_a_divisor_the_api_server_refuses_is_refused(resource, divisor, says) -> None:
    with pytest.raises(ModelError) as err:
        ResourceField(resource=resource, divisor=divisor)
    assert says in str(err.value), str(err.value)


def test_a_resource_the_downward_api_lacks_is_refused() -> None:
    with pytest.raises(ModelError) as err:
        ResourceField(resource="limits.nvidia.com/gpu")
    assert "limits.cpu" in str(err.value) and "requests.ephemeral-storage" in str(err.value)


def test_mpi_ranks_would_see_the_launcher_s_pod_fields_so_they_are_refused(ws) -> None:
    with pytest.raises(ModelError) as err:
        MPIJob(
            name="x", image="i", command=["python"], resources=RES,
            env_refs={"POD_IP": PodField(path="status.podIP")},
        )  # fmt: skip
    says = (
        "POD_IP in env_refs read the pod's own fields, but sshd starts the MPI ranks without "
        "the worker pod's env and mpirun forwards the launcher's values (-x)"
    )
    assert says in str(err.value)
    # A TrainJob on an MPI runtime, told at plan time (the runtime is only known then).
    add_fields(ws, DS_TRAINJOB, 'env_refs={"NODE": PodField(path="spec.nodeName")},', "PodField")
    err = refusals(ws)
    line = line_of(ws, DS_TRAINJOB, "env_refs=")
    assert f"{DS_TRAINJOB}:{line}: TrainJob 'llama-pretrain-ds': env_refs: on MPI " in err
    assert "NODE in env_refs read the pod's own fields" in err


def test_optional_keys_render_and_still_need_the_team_s_grant(ws, tree) -> None:
    # Optional only says the pod may start without the key: reading it is still a grant.
    add_fields(ws, RESNET, "env_refs={" + OPTIONAL + "},", "ConfigMapKey")
    err = refusals(ws)
    assert (
        "env_refs.DATA: team 'vision' may not read ConfigMap 'datasets' key 'path'; "
        "Team.config_maps in jobs/platform/teams.py allows none"
    ) in err, err
    edit(ws, TEAMS, 'vision = Team(name="vision",', GRANT)
    assert refusals(ws) == ""
    # Rendered and explained (in the module's tree, granted the same way).
    (job, *_) = tree.docs(KINDS["PyTorchJob"][1])
    env = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "DATA",
        "valueFrom": {"configMapKeyRef": {"key": "path", "name": "datasets", "optional": True}},
    } in env
    run = tree.run("explain", "resnet50-ddp", "--cluster", "gpu-east")
    assert "<ConfigMap 'datasets' key 'path' (optional)>" in run.out, run.out
    assert ConfigMapKey(config_map="a", key="b").optional is False


# --- $(VAR) -------------------------------------------------------------------------------


def _go_expand_lookups(text: str) -> list[str]:
    """The names k8s.io/kubernetes third_party/forked/golang/expansion Expand looks up in
    ``text``, transcribed step by step as the oracle of ``references``."""
    looked = []
    cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")", 1)
                if close == -1:
                    advance = 1
                else:
                    looked.append(rest[1:close])
                    advance = close + 1
            else:
                advance = 1
            cursor += advance
        cursor += 1
    return looked


@given(st.text(alphabet="$()ab ", max_size=30))
def test_references_are_the_names_the_kubelet_looks_up(text: str) -> None:
    assert [r.name for r in references(text)] == _go_expand_lookups(text)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("--rank=$(RANK)", ["RANK"]),
        ("$$(hostname)", []),
        ("$$$(X)", ["X"]),
        ("$(unclosed", []),
        ("$(A)$(B)", ["A", "B"]),
        ("cost $5", []),
    ],
)
def test_references_examples(text: str, names: list[str]) -> None:
    assert [r.name for r in references(text)] == names


def test_command_and_args_may_use_what_the_operator_injects_and_the_escape(ws) -> None:
    edit(ws, RESNET, 'args=["--epochs", "10"],',
         'args=["--epochs", "10", "--rank=$(RANK)", "--at=$(MASTER_ADDR)", "--host=$$(hostname)"],'
         '\n    env={"DATA": "/data", "SHARD": "$(DATA)/shard"},')  # fmt: skip
    assert refusals(ws) == ""


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        (
            'args=["--epochs", "10"],',
            'args=["--epochs", "10", "--host=$(hostname)"],',
            "args",
            "$(hostname) names no variable of container 'pytorch' of the Master pods: the "
            "kubelet expands only variables the container has and leaves $(hostname) as "
            "written; set hostname in env (or env_refs, env_from), or write $$(hostname) for "
            "the literal text (a shell's command substitution)",
        ),
        (
            'args=["--epochs", "10"],',
            'args=["--epochs", "10"],\n    env={"WHERE": "$(RANK)"},',
            "env.WHERE",
            "$(RANK) in WHERE's value: RANK comes after WHERE in the env of container 'pytorch' "
            "of the Master pods (set by Training Operator), and the kubelet expands an env "
            "value only with the variables before it, leaving $(RANK) as written; put RANK "
            "before WHERE in env, or use $(RANK) in command or args",
        ),
        (
            'args=["--epochs", "10"],',
            'args=["--epochs", "10"],\n    env={"A": "$(B)/x", "B": "/data"},',
            "env.A",
            "$(B) in A's value: B comes after A in the env of container 'pytorch' of the Master "
            "pods (set by the job)",
        ),
        (
            'queue="vision",',
            'queue="vision",\n    init_containers=[__import__("trainkit").InitContainer('
            'name="fetch", command=["sh", "-c", "cp $(SRC) /x"], resources=__import__('
            '"trainkit").Resources(cpu=1, memory="1Gi"))],\n    env={"SRC": "/data"},',
            "init_containers[0].command",
            "$(SRC) names no variable of container 'fetch' of the Master pods",
        ),
    ],
    ids=["undefined-in-args", "operator-var-in-env", "later-job-var", "init-container"],
)
def test_a_reference_the_kubelet_would_leave_as_written_is_refused(
    ws, old, new, field, says
) -> None:
    edit(ws, RESNET, old, new)
    err = refusals(ws)
    top = field.split(".")[0].split("[")[0]
    line = line_of(ws, RESNET, f"{top}=")
    assert f"{RESNET}:{line}: PyTorchJob 'resnet50-ddp': {field}: {says}" in err, err


def test_env_refs_come_after_env_values_and_the_message_says_so(ws) -> None:
    add_fields(
        ws, RESNET,
        'env={"WHERE": "$(POD_IP):1234"}, env_refs={"POD_IP": PodField(path="status.podIP")},',
        "PodField",
    )  # fmt: skip
    err = refusals(ws)
    assert (
        "(set by env_refs, which come after every env value: the pod's status.podIP), and "
        "the kubelet expands an env value only with the variables before it, leaving "
        "$(POD_IP) as written; use $(POD_IP) in command or args, which see every variable"
    ) in err, err


def test_a_key_of_env_from_is_defined_before_every_env_value(ws) -> None:
    edit(ws, TEAMS, "    max_gpus=96,",
         '    secrets={"wandb": ["WANDB_API_KEY"]},\n    max_gpus=96,')  # fmt: skip
    edit(ws, DEEPSPEED, "from trainkit import", "from trainkit import SecretEnv,")
    edit(
        ws, DEEPSPEED, '    nodes=2,',
        '    nodes=2,\n    env_from=[SecretEnv(secret="wandb")],',
    )  # fmt: skip
    edit(ws, DEEPSPEED, '"NCCL_DEBUG": "WARN"}', '"NCCL_DEBUG": "WARN", "KEY": "$(WANDB_API_KEY)"}')
    assert refusals(ws) == ""


def test_models_of_any_kind_accept_references_they_cannot_judge_alone() -> None:
    # Which variables exist is known only with the operator's: the plan judges, not the model.
    job = PyTorchJob(name="x", image="i", command=["python", "$(ANYTHING)"], resources=RES, nodes=1)
    assert job.command == ["python", "$(ANYTHING)"]
