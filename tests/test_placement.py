"""Node label rules and a job's layout across racks or zones, rendered as the scheduler reads
them (Volcano 1.12's predicates plugin runs the same filters as kube-scheduler)."""

from __future__ import annotations

import pytest
import yaml

from conftest import Workspace
from trainkit import (
    DefinitionError,
    NodeLabel,
    PyTorchJob,
    Resources,
    Toleration,
    Topology,
    TrainJob,
)

PLACED = """\
from trainkit import NodeLabel, PyTorchJob, Resources, Script, Topology

job = PyTorchJob(
    name="placed",
    image="registry.example.com/pytorch:2",
    script=Script.file("scripts/train.py"),
    nodes=2,
    resources=Resources(cpu=4, memory="16Gi", gpu=2),
    node_affinity=[
        NodeLabel(key="gpu.product", values=["A100", "H100"]),
        NodeLabel(key="spot", operator="DoesNotExist"),
        NodeLabel(key="zone", values=["a"], weight=10),
    ],
    topology=Topology(key="rack", layout={layout!r}{extra}),
    clusters=["east"],
)
"""


def pod_spec(ws: Workspace, role: str = "Worker") -> dict:  # type: ignore[type-arg]
    doc = yaml.safe_load((ws.out / "clusters/east/vision/pytorchjob-placed.yaml").read_text())
    return doc["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("layout", ["pack", "spread"])
def test_node_rules_and_the_layout_render_and_pass_the_crds(bare, bare_cli, crds, layout):
    extra = ", required=True, max_skew=2" if layout == "spread" else ""
    bare.write("jobs/vision/placed.py", PLACED.format(layout=layout, extra=extra))
    run = bare_cli("synth")
    assert run.code == 0, run.err
    selector = {
        "matchLabels": {
            "app.kubernetes.io/managed-by": "trainkit",
            "trainkit.dev/team": "vision",
            "trainkit.dev/job": "placed",
        }
    }
    for role in ("Master", "Worker"):
        spec = pod_spec(bare, role)
        node = spec["affinity"]["nodeAffinity"]
        assert node["requiredDuringSchedulingIgnoredDuringExecution"] == {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "gpu.product", "operator": "In", "values": ["A100", "H100"]},
                        {"key": "spot", "operator": "DoesNotExist"},
                    ]
                }
            ]
        }
        assert node["preferredDuringSchedulingIgnoredDuringExecution"] == [
            {
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
                "weight": 10,
            }
        ]
        if layout == "pack":
            (term,) = spec["affinity"]["podAffinity"][
                "preferredDuringSchedulingIgnoredDuringExecution"
            ]
            assert term["podAffinityTerm"] == {"labelSelector": selector, "topologyKey": "rack"}
            assert "topologySpreadConstraints" not in spec
        else:
            assert spec["topologySpreadConstraints"] == [
                {
                    "labelSelector": selector,
                    "maxSkew": 2,
                    "topologyKey": "rack",
                    "whenUnsatisfiable": "DoNotSchedule",
                }
            ]
            assert "podAffinity" not in spec["affinity"]
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: NodeLabel(key="gpu", operator="In"), "operator In needs values=[...]"),
        (
            lambda: NodeLabel(key="gpu", operator="Exists", values=["x"]),
            "operator Exists takes no values; remove them",
        ),
        (lambda: NodeLabel(key="gpu", values=["x"], weight=0), "weight"),
        (
            lambda: Topology(key="rack", layout="pack", required=True),
            "max_skew and required apply to layout='spread'",
        ),
        (
            lambda: NodeLabel(key="gpu product", values=["x"]),
            "'gpu product' is not a label key: the name part must be",
        ),
        (lambda: NodeLabel(key="gpu", values=["A 100"]), "'A 100' is not a label value"),
        (lambda: Toleration(key="a b", operator="Exists"), "'a b' is not a label key"),
        (
            lambda: PyTorchJob(
                name="j",
                image="i:1",
                command=["x"],
                resources=Resources(cpu=1, memory="1Gi"),
                node_selector={"-gpu": "a"},
            ),
            "'-gpu' is not a label key",
        ),
        (
            lambda: PyTorchJob(
                name="j",
                image="i:1",
                command=["x"],
                resources=Resources(cpu=1, memory="1Gi"),
                node_selector={"gpu": "a/b"},
            ),
            "'a/b' is not a label value",
        ),
    ],
)
def test_placement_rules_the_api_server_refuses_are_refused(build, says):
    with pytest.raises(
        DefinitionError, match=r"(?s).*" + says.replace("[", r"\[").replace("]", r"\]")
    ):
        build()


def test_a_trainjobs_node_rules_keep_its_runtimes(tw, bare_cli, crds):
    runtimes, tj = tw.root / "jobs/platform/runtimes.py", tw.root / "jobs/vision/tj.py"
    text = runtimes.read_text().replace("from trainkit import ", "from trainkit import NodeLabel, ")
    runtimes.write_text(
        text.replace(
            '    shm_size="8Gi",',
            '    shm_size="8Gi",\n    node_affinity=[NodeLabel(key="ib", operator="Exists")],',
        )
    )
    text = tj.read_text().replace("from trainkit import ", "from trainkit import NodeLabel, ")
    tj.write_text(
        text.replace(
            '    runtime="torch",',
            '    runtime="torch",\n    node_affinity=[NodeLabel(key="gpu.product", values=["A800"])],',
        )
    )
    run = bare_cli("synth")
    assert run.code == 0, run.err
    runtime = yaml.safe_load((tw.out / "clusters/east/platform/runtimes/torch.yaml").read_text())
    (rjob,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    terms = rjob["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "ib", "operator": "Exists"}]}
    ]
    trainjob = yaml.safe_load((tw.out / "clusters/east/vision/trainjob-tj-r1.yaml").read_text())
    (patch,) = trainjob["spec"]["runtimePatches"]
    (node_job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    node = node_job["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    # The patch's list replaces the runtime's in Trainer's strategic merge: both are written.
    assert node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {
            "matchExpressions": [
                {"key": "ib", "operator": "Exists"},
                {"key": "gpu.product", "operator": "In", "values": ["A800"]},
            ]
        }
    ]
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err


def test_a_trainjob_packs_its_nodes_through_the_patch_and_cannot_spread(tw, bare_cli, crds):
    tj = tw.root / "jobs/vision/tj.py"
    text = tj.read_text().replace("from trainkit import ", "from trainkit import Topology, ")
    tj.write_text(
        text.replace(
            '    runtime="torch",',
            '    runtime="torch",\n    topology=Topology(key="rack", layout="pack"),',
        )
    )
    run = bare_cli("synth")
    assert run.code == 0, run.err
    path = tw.out / "clusters/east/vision/trainjob-tj-r1.yaml"
    (patch,) = yaml.safe_load(path.read_text())["spec"]["runtimePatches"]
    (node_job,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    pod = node_job["template"]["spec"]["template"]
    (term,) = pod["spec"]["affinity"]["podAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    # The selector is the labels the same patch gives the job's pods.
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == pod["metadata"]["labels"]
    assert "nodeAffinity" not in pod["spec"]["affinity"]  # the runtime's stays as it is
    assert bare_cli("check", "--crds", str(crds)).code == 0
    with pytest.raises(DefinitionError, match="a TrainJob cannot spread its nodes"):
        TrainJob(name="t", runtime="r", topology=Topology(key="rack", layout="spread"))
