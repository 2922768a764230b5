"""A PyTorchJob's rendezvous port in the job's words (``master_port=``).

Training Operator v1.9 reads the port named ``pytorchjob-port`` of container ``pytorch``
(pkg/controller.v1/pytorch/envvar.go getPortFromPyTorchJob) into MASTER_PORT, and an elastic
job's c10d endpoint from the Workers' (elastic.go, without rdzvPort).
"""

from __future__ import annotations

from typing import Any

import pytest

from kind_fixtures import render
from trainkit import Elastic, ModelError, PyTorchJob, Resources, Script
from trainkit.effective import effective_job


def job(**kw: Any) -> PyTorchJob:
    fields: dict[str, Any] = {
        "name": "pt",
        "image": "img:1",
        "script": Script.file("train.py"),
        "nodes": 2,
        "resources": Resources(cpu=4, memory="16Gi", gpu=1),
    }
    return PyTorchJob(**(fields | kw))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"master_port": 0}, "PyTorchJob 'pt': master_port: must be at least 1"),
        ({"master_port": 65536}, "PyTorchJob 'pt': master_port: must be at most 65535"),
        ({"master_port": "x"}, "PyTorchJob 'pt': master_port: must be a whole number"),
        (
            {"master_port": 37777, "ports": {"metrics": 37777}},
            "master_port is 37777, which ports also gives 'metrics': the rendezvous and the "
            "program would both listen there; choose another number",
        ),
    ],
)
def test_bad_master_ports_are_refused_with_the_reason(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ModelError) as e:
        job(**fields)
    assert says in str(e.value)


def env_of(ps: Any) -> dict[str, str]:
    return {e.name: e.value for e in ps.env}


def test_master_port_is_every_pod_s_and_the_operator_s_env() -> None:
    body, pj = render(job(master_port=37777))
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        (c,) = spec["template"]["spec"]["containers"]
        assert c["ports"] == [
            {"containerPort": 37777, "name": "pytorchjob-port", "protocol": "TCP"}
        ]
    for ps in effective_job(pj, body).pod_sets:
        assert env_of(ps)["MASTER_PORT"] == env_of(ps)["PET_MASTER_PORT"] == "37777"


def test_an_elastic_job_s_rendezvous_follows_it() -> None:
    body, pj = render(job(master_port=29400, elastic=Elastic(min_nodes=1)))
    (worker,) = effective_job(pj, body).pod_sets
    assert env_of(worker)["PET_RDZV_ENDPOINT"].endswith(":29400")


def test_without_it_the_operator_s_default_stays() -> None:
    body, _ = render(job())
    (c,) = body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert c["ports"][0]["containerPort"] == 23456
