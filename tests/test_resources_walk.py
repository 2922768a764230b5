"""Where a definition's ``Resources`` are (``resolve.network._resources``): the walk visits
only the fields whose annotation can hold one, and finds what a walk of every field finds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import Field

from conftest import Workspace
from trainkit import InitContainer, RayJob, Resources, WorkerGroup
from trainkit.load import load_jobs
from trainkit.model.base import TrainkitModel
from trainkit.resolve.network import _may_hold, _resource_fields, _resources


def _every_field(obj: object, path: str = "") -> Iterator[tuple[str, Resources]]:
    """The walk of every field of every model (what ``_resources`` did before it skipped
    the fields that cannot hold a ``Resources``)."""
    if isinstance(obj, Resources):
        yield path, obj
    elif isinstance(obj, TrainkitModel):
        for name in type(obj).model_fields:
            yield from _every_field(getattr(obj, name), f"{path}.{name}" if path else name)
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _every_field(value, f"{path}.{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from _every_field(value, f"{path}[{i}]")


def test_the_walk_finds_what_a_walk_of_every_field_finds_in_every_example(ws: Workspace) -> None:
    definitions = load_jobs(ws.jobs, ws.root).definitions
    paths = set()
    for d in definitions:
        expected = list(_every_field(d.obj))
        assert list(_resources(d.obj)) == expected, d.name
        paths |= {p for p, _ in expected}
    # in models, lists of models and models of models (a runtime's initializers)
    assert {"resources", "workers[0].resources", "initializers.model.resources"} <= paths


def test_the_walk_finds_resources_in_worker_groups_submitters_and_init_containers() -> None:
    gpu = {"example.com/ib": 1}
    job = RayJob(
        name="r",
        image="registry.example.com/ray:2",
        command=["python", "x.py"],
        clusters=["east"],
        head=Resources(cpu=4, memory="8Gi"),
        workers=[WorkerGroup(name="w", nodes=1, resources=Resources(cpu=4, memory="8Gi", extended=gpu))],
        submitter_resources=Resources(cpu=1, memory="1Gi"),
        init_containers=[InitContainer(name="i", image="busybox", command=["true"], resources=Resources(cpu=1, memory="1Gi"))],
    )  # fmt: skip
    paths = [p for p, _ in _resources(job)]
    assert paths == [p for p, _ in _every_field(job)]
    assert set(paths) >= {"head", "workers[0].resources", "submitter_resources",
                          "init_containers[0].resources"}  # fmt: skip


class _Inner(TrainkitModel):
    label: str = "inner"
    res: Resources | None = None


class _Loop(TrainkitModel):
    """A model that holds a Resources only through a model that holds it back."""

    label: str = "loop"
    back: _Back | None = None


class _Back(TrainkitModel):
    label: str = "back"
    loop: _Loop | None = None
    deep: dict[str, list[_Inner]] = Field(default_factory=dict)


_Loop.model_rebuild()


def test_a_field_may_hold_resources_through_any_model_it_names() -> None:
    assert _resource_fields(_Loop) == ("back",)
    assert _resource_fields(_Back) == ("loop", "deep")
    assert not _may_hold(dict[str, list[int | str]])
    assert _may_hold(dict[str, Any]) and _may_hold(list) and _may_hold(object)
    obj = _Loop(back=_Back(loop=_Loop(back=_Back(deep={"a": [_Inner(res=Resources(cpu=1, memory="1Gi"))]}))))  # fmt: skip
    assert [p for p, _ in _resources(obj)] == ["back.loop.back.deep.a[0].res"]
