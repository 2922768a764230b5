"""An elastic PyTorchJob's autoscaler beyond CPU and memory (Pods, Object and External
metrics) and its rendezvous' run id and settings (``rdzv_id``, ``rdzv_conf``).

Training Operator v1.9.4 copies ``elasticPolicy.metrics`` into its HorizontalPodAutoscaler as
they are (pkg/controller.v1/pytorch/hpa.go desiredHPA), and turns ``rdzvId`` and ``rdzvConf``
into PET_RDZV_ID and one PET_RDZV_CONF ``k=v,k=v`` (pkg/controller.v1/pytorch/elastic.go
generateEnvRDZVConf), which torchrun parses back (torch/distributed/elastic/rendezvous/
utils.py _parse_rendezvous_config)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Workspace
from test_elastic import BASE, ELASTIC_JOB, nine_workers_over_the_queue, planned
from trainkit import (
    Capacity,
    Cluster,
    DefinitionError,
    Elastic,
    ExternalMetric,
    ObjectMetric,
    PodsMetric,
    PyTorchJob,
    Queue,
    ResourceMetric,
    Team,
)
from trainkit.effective.operator_pods import effective_pytorchjob
from trainkit.errors import Problem
from trainkit.load import Definition
from trainkit.render.training_operator import render_pytorchjob
from trainkit.resolve import PlannedJob, build_plan
from trainkit.resolve.rendezvous import check_rendezvous

PODS = PodsMetric(metric="samples_per_second", selector={"stage": "train"}, average="400")
OBJECT = ObjectMetric(
    metric="backlog",
    object_kind="Service",
    object_name="ingest",
    object_api_version="v1",
    value="1k",
)
EXTERNAL = ExternalMetric(
    metric="pubsub_undelivered_messages", selector={"subscription": "shards"}, average="50"
)


def job(**fields: Any) -> PyTorchJob:
    return PyTorchJob(**{**BASE, **fields})


def test_each_metric_is_the_metric_spec_the_hpa_gets() -> None:
    elastic = Elastic(min_nodes=1, max_nodes=6, metrics=[PODS, OBJECT, EXTERNAL])
    body = render_pytorchjob(planned(job(nodes=2, elastic=elastic)))
    assert body["spec"]["elasticPolicy"]["metrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {
                    "name": "samples_per_second",
                    "selector": {"matchLabels": {"stage": "train"}},
                },
                "target": {"type": "AverageValue", "averageValue": "400"},
            },
        },
        {
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "ingest"},
                "metric": {"name": "backlog"},
                "target": {"type": "Value", "value": "1k"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {
                    "name": "pubsub_undelivered_messages",
                    "selector": {"matchLabels": {"subscription": "shards"}},
                },
                "target": {"type": "AverageValue", "averageValue": "50"},
            },
        },
    ]


@pytest.mark.parametrize(
    "metric",
    [
        PODS,
        OBJECT,
        EXTERNAL,
        ExternalMetric(metric="m", value="3"),
        ObjectMetric(metric="m", object_kind="Deployment", object_name="d", average="2"),
        ResourceMetric(resource="cpu", utilization=80),
    ],
)
def test_a_metric_is_the_same_after_the_loader_rebuilds_it(metric: Any) -> None:
    # The loader rebuilds a definition from the JSON of the fields it set
    # (load/worker.py: exclude_unset). A Pods and an External metric with an average read
    # alike there: the External one came back a Pods metric (shown failing before the type
    # tag).
    elastic = Elastic(min_nodes=1, max_nodes=4, metrics=[metric])
    data = job(nodes=2, elastic=elastic).model_dump(mode="json", exclude_unset=True)
    rebuilt = PyTorchJob.model_validate(data)
    assert rebuilt.elastic is not None
    (back,) = rebuilt.elastic.metrics
    assert type(back) is type(metric)
    assert back.model_dump() == metric.model_dump()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda: PodsMetric(metric="m", average="0"),
            "pods metric 'm': average '0' must be a positive quantity (the autoscaler refuses 0)",
        ),
        (lambda: PodsMetric(metric="m"), "average: required field is missing"),
        (
            lambda: ObjectMetric(metric="m", object_kind="Service", object_name="s"),
            "object metric 'm': give exactly one target, value=<the metric's target> or "
            "average=<the metric's target per Worker>",
        ),
        (
            lambda: ObjectMetric(
                metric="m", object_kind="Service", object_name="s", value="1", average="1"
            ),
            "object metric 'm': give exactly one target",
        ),
        (
            lambda: ExternalMetric(metric="m", value="0m"),
            "external metric 'm': value '0m' must be a positive quantity",
        ),
        (lambda: ExternalMetric(metric="m", value="-1"), "'-1' is not a Kubernetes quantity"),
        (lambda: ExternalMetric(metric="m"), "external metric 'm': give exactly one target"),
        (
            lambda: ExternalMetric(metric="a/b", value="1"),
            "'a/b' is not a metric name: the metrics APIs take it as one URL path segment",
        ),
        (lambda: PodsMetric(metric="..", average="1"), "'..' is not a metric name"),
        (lambda: PodsMetric(metric="m m", average="1"), "'m m' is not a metric name"),
        (
            lambda: ObjectMetric(metric="m", object_kind="service", object_name="s", value="1"),
            "'service' is not an object kind: give a kind such as 'Service' or 'Deployment'",
        ),
        (
            lambda: ObjectMetric(metric="m", object_kind="Service", object_name="S_1", value="1"),
            "object_name",
        ),
        (
            lambda: ObjectMetric(
                metric="m",
                object_kind="Deployment",
                object_name="d",
                object_api_version="apps",
                value="1",
            ),
            "'apps' is not an API version: give '<group>/<version>' or a core version",
        ),
        (
            lambda: ExternalMetric(metric="m", selector={"Bad Key": "x"}, value="1"),
            "'Bad Key' is not a label key",
        ),
        (lambda: ExternalMetric(metric="m", value="lots"), "'lots' is not a Kubernetes quantity"),
    ],
)
def test_bad_metrics_are_refused_with_the_reason(make: Any, says: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        make()
    assert says in str(caught.value), str(caught.value)


def test_rdzv_id_and_conf_become_the_operators_env() -> None:
    elastic = Elastic(
        min_nodes=1,
        rdzv_backend="etcd",
        rdzv_host="etcd-gpu",
        rdzv_port=2379,
        rdzv_id="imagenet-run-7",
        rdzv_conf={"protocol": "https", "cacert": "/etc/etcd/ca.crt", "timeout": "900"},
    )
    pj = planned(job(nodes=2, elastic=elastic))
    body = render_pytorchjob(pj)
    policy = body["spec"]["elasticPolicy"]
    assert policy["rdzvId"] == "imagenet-run-7"
    assert policy["rdzvConf"] == [
        {"key": "protocol", "value": "https"},
        {"key": "cacert", "value": "/etc/etcd/ca.crt"},
        {"key": "timeout", "value": "900"},
    ]
    ej = effective_pytorchjob(pj, body)
    env = {e.name: e.value for e in ej.pod_sets[0].env}
    assert env["PET_RDZV_ID"] == "imagenet-run-7"
    assert env["PET_RDZV_CONF"] == "protocol=https,cacert=/etc/etcd/ca.crt,timeout=900"
    assert any(
        "(etcd, run id imagenet-run-7, settings protocol=https,cacert=/etc/etcd/ca.crt,"
        "timeout=900)" in note
        for note in ej.notes
    ), ej.notes
    # Without them the operator sets neither.
    plain = render_pytorchjob(planned(job(nodes=2, elastic=Elastic(min_nodes=1))))
    assert "rdzvId" not in plain["spec"]["elasticPolicy"]
    assert "rdzvConf" not in plain["spec"]["elasticPolicy"]


_KEY = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True).filter(
    lambda k: k != "is_host"
)
_VALUE = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("C", "Z"), exclude_characters=",$"),
    min_size=1,
    max_size=30,
) | st.from_regex(r"[a-z0-9/]+( [a-z0-9/=]+)*", fullmatch=True)


def _torchrun_rendezvous_utils() -> ModuleType:
    """torch's own torch/distributed/elastic/rendezvous/utils.py, loaded by its file: it imports
    only the standard library, and importing it through the ``torch`` package costs 1.5
    CPU-s (all of torch) for one pure function."""
    torch = importlib.util.find_spec("torch")
    assert torch is not None and torch.origin is not None
    path = Path(torch.origin).parent / "distributed" / "elastic" / "rendezvous" / "utils.py"
    spec = importlib.util.spec_from_file_location("_torchrun_rendezvous_utils", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_parse_rendezvous_config = _torchrun_rendezvous_utils()._parse_rendezvous_config


@given(conf=st.dictionaries(_KEY, _VALUE, max_size=6))
def test_torchrun_reads_back_every_setting_trainkit_accepts(conf: dict[str, str]) -> None:
    elastic = Elastic(min_nodes=1, rdzv_conf=conf)
    pj = planned(job(nodes=1, elastic=elastic))
    body = render_pytorchjob(pj)
    env = {e.name: e.value for e in effective_pytorchjob(pj, body).pod_sets[0].env}
    assert _parse_rendezvous_config(env.get("PET_RDZV_CONF", "")) == conf


@pytest.mark.parametrize(
    ("elastic", "says"),
    [
        (
            {"rdzv_conf": {"join_timeout": "9,00"}},
            "rdzv_conf.join_timeout: '9,00' is not a rendezvous setting's value: ',' ends it "
            "(the operator joins the settings with ',')",
        ),
        (
            {"rdzv_conf": {"k": "$(HOME)"}},
            "'$' is the kubelet's ($(VAR) and $$ are expanded in env values)",
        ),
        ({"rdzv_conf": {"k": " x"}}, "torchrun strips the spaces at its ends"),
        ({"rdzv_conf": {"k": ""}}, "it is empty (torchrun refuses an option without a value)"),
        ({"rdzv_conf": {"k": "a\tb"}}, "it holds a control character"),
        ({"rdzv_conf": {"k": "x" * 1025}}, "it is longer than 1024 characters"),
        (
            {"rdzv_conf": {"a=b": "x"}},
            "'a=b' is not a rendezvous setting: a name of letters, digits and '_'",
        ),
        (
            {"rdzv_conf": {"is_host": "true"}},
            "rdzv_conf sets is_host, which every Worker gets alike: true makes each Worker start "
            "its own c10d store, false makes none start it",
        ),
        (
            {"rdzv_id": "run/7"},
            "rdzv_id: 'run/7' is not a rendezvous id: 1-128 letters, digits, '_', '.' or '-'",
        ),
        ({"rdzv_id": ""}, "'' is not a rendezvous id"),
        ({"rdzv_conf": {f"k{i}": "1" for i in range(17)}}, "rdzv_conf"),
    ],
)
def test_bad_rendezvous_settings_are_refused_with_the_reason(
    elastic: dict[str, Any], says: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        Elastic(min_nodes=1, **elastic)
    assert says in str(caught.value), str(caught.value)


SCALED_JOB = ELASTIC_JOB.replace(
    "elastic=Elastic(min_nodes=2, max_restarts=5)",
    "elastic=Elastic(min_nodes=1, max_nodes=MAX, max_restarts=5, rdzv_conf={'join_timeout': "
    "'900'}, metrics=[ExternalMetric(metric='backlog', selector={'queue': 'shards'}, "
    "average='50'), PodsMetric(metric='samples_per_second', average='400')])",
).replace("import Elastic,", "import Elastic, ExternalMetric, PodsMetric,")


def test_any_metric_lets_the_autoscaler_widen_to_max_nodes_and_is_counted(
    bare: Workspace, bare_cli, crds
) -> None:  # type: ignore[no-untyped-def]
    # What a metric widens is the Worker count: the queue, caps and plan count max_nodes
    # whatever the metric.
    nine_workers_over_the_queue(bare, bare_cli, SCALED_JOB)
    # Within the queue, it synthesizes through the loader (the metrics keep their type),
    # passes the pinned CRD, and explain names each metric.
    bare.write("jobs/vision/stretch.py", SCALED_JOB.replace("MAX", "6"))
    run = bare_cli("synth")
    assert run.code == 0, run.err
    written = (bare.root / "generated/clusters/east/vision/pytorchjob-stretch.yaml").read_text()
    assert "type: External" in written and "type: Pods" in written
    assert "key: join_timeout" in written
    run = bare_cli("check", "--crds", str(crds))
    assert run.code == 0, run.err
    run = bare_cli("explain", "stretch")
    assert (
        "by external backlog{queue=shards} at 50 per Worker or samples_per_second at 400 per "
        "Worker" in run.out
    ), run.out
    assert "(c10d, settings join_timeout=900)" in run.out


# --- one rendezvous per server and run id (resolve/rendezvous.py) ------------------------------


def _at(host: str, run_id: str | None = None, name: str = "e") -> PyTorchJob:
    elastic = Elastic(
        min_nodes=1, rdzv_backend="etcd", rdzv_host=host, rdzv_port=2379, rdzv_id=run_id
    )
    return job(name=name, nodes=2, elastic=elastic)


def _placed(
    job: PyTorchJob, team: str, cluster: str = "east", d: Definition | None = None
) -> PlannedJob:
    d = d or Definition(obj=job, file=f"jobs/{team}/{job.name}.py", team=team, line=3)
    c = Cluster(name=cluster, server=f"https://{cluster}.example.com", gpus_per_node=8)
    return PlannedJob(job, d, c, team, "research", image=str(job.image))


def _clashes(*placed: PlannedJob) -> list[str]:
    problems: list[Problem] = []
    check_rendezvous(list(placed), problems)
    return [f"{p.field}: {p.message}" for p in problems]


def test_two_teams_jobs_at_one_etcd_under_one_run_id_are_refused() -> None:
    (said,) = _clashes(
        _placed(_at("etcd.infra", "shared"), "vision"),
        _placed(_at("etcd.infra", "shared", name="f"), "llm"),
    )
    assert said == (
        "elastic.rdzv_id: rdzv_host etcd.infra:2379 with rdzv_id 'shared' is the rendezvous of "
        "PyTorchJob 'e' (jobs/vision/e.py:3) of team 'vision' too: their Workers would join one "
        "worker group; give this job an rdzv_id no other job uses at that server (e.g. its own "
        "name and run)"
    )


def test_without_rdzv_id_both_jobs_take_torchruns_default_and_meet() -> None:
    (said,) = _clashes(
        _placed(_at("etcd.infra.svc.cluster.local"), "vision"),
        _placed(_at("etcd.infra", name="f"), "vision"),
    )
    assert "with no rdzv_id (torchrun's default id 'none') is the rendezvous of" in said


def test_a_job_on_two_clusters_meets_itself_only_at_a_server_outside_both() -> None:
    external = _at("etcd.example.com", "run-1")
    d = Definition(obj=external, file="jobs/vision/e.py", team="vision", line=3)
    (said,) = _clashes(_placed(external, "vision", d=d), _placed(external, "vision", "west", d))
    assert said == (
        "elastic.rdzv_host: rdzv_host etcd.example.com:2379 is one server for clusters 'east' "
        "and 'west', where the job runs twice: both copies' Workers would join one worker "
        "group; give an rdzv_host inside each cluster (a Service name), or place the job on one "
        "cluster"
    )
    in_cluster = _at("etcd.infra", "run-1")
    d = Definition(obj=in_cluster, file="jobs/vision/e.py", team="vision", line=3)
    assert (
        _clashes(_placed(in_cluster, "vision", d=d), _placed(in_cluster, "vision", "west", d)) == []
    )


def test_distinct_ids_servers_or_namespaces_do_not_meet() -> None:
    assert (
        _clashes(
            _placed(_at("etcd.infra", "a"), "vision"),
            _placed(_at("etcd.infra", "b", name="f"), "llm"),
            # A Service's short name resolves in each job's own namespace: two etcds.
            _placed(_at("etcd", "same", name="g"), "vision"),
            _placed(_at("etcd", "same", name="h"), "llm"),
            # On the first Worker (no rdzv_host) every job has its own store.
            _placed(job(name="i", nodes=2, elastic=Elastic(min_nodes=1)), "vision"),
            _placed(job(name="k", nodes=2, elastic=Elastic(min_nodes=1)), "vision"),
        )
        == []
    )


def test_the_plan_refuses_the_clash_across_teams() -> None:
    c = Cluster(name="east", server="https://east.example.com", gpus_per_node=8)
    p = "jobs/platform/p.py"
    defs = [
        Definition(c, p, "platform"),
        Definition(Queue(name="q", capability=Capacity(gpu=64)), p, "platform"),
        Definition(Team(name="vision", queues=["q"]), p, "platform"),
        Definition(Team(name="llm", queues=["q"]), p, "platform"),
        Definition(_at("etcd.infra", "x"), "jobs/vision/a.py", "vision"),
        Definition(_at("etcd.infra", "x", name="b"), "jobs/llm/b.py", "llm"),
    ]
    with pytest.raises(DefinitionError) as e:
        build_plan(defs)
    (problem,) = e.value.problems
    assert (problem.file, problem.field) == ("jobs/llm/b.py", "elastic.rdzv_id")
