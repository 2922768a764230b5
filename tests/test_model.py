import contextlib
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import create_model
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

from trainkit import (
    Capacity,
    Cluster,
    DefinitionError,
    PyTorchJob,
    Queue,
    Resources,
    Script,
    Toleration,
    Volume,
)
from trainkit.errors import TrainkitError
from trainkit.model import TrainkitModel
from trainkit.model.env import EnvRef, EnvSource
from trainkit.model.field_docs import field_docstrings
from trainkit.model.volumes import AnyVolume
from trainkit.render.training_operator import nproc_per_node

RES = Resources(cpu=8, memory="32Gi", gpu=4)


def job(**kw):
    base = {"name": "train", "image": "img:1", "command": ["python", "t.py"], "resources": RES}
    base.update(kw)
    return PyTorchJob(**base)


def messages(exc: pytest.ExceptionInfo[DefinitionError]) -> list[str]:
    return [f"{p.obj}|{p.field}|{p.message}" for p in exc.value.problems]


def test_process_defaults_follow_the_gpus_for_scripts_and_stay_auto_for_commands():
    script = {"command": None, "script": Script.file("t.py")}
    assert nproc_per_node(job(**script)) == "4"
    assert nproc_per_node(job(resources=Resources(cpu=1, memory="1Gi"), **script)) == "1"
    assert nproc_per_node(job(procs_per_node=2)) == "2"
    assert nproc_per_node(job(procs_per_node="auto", **script)) == "auto"
    assert nproc_per_node(job()) is None  # a command keeps the operator's auto


def test_models_are_frozen():
    j = job()
    with pytest.raises(Exception, match="frozen"):
        j.nodes = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kw", "field", "text"),
    [
        ({"name": "Bad_Name"}, "name", "DNS-1035"),
        ({"name": "1abc"}, "name", "DNS-1035"),
        ({"nodes": 0}, "nodes", "must be at least 1"),
        ({"procs_per_node": 0}, "procs_per_node", "must be at least 1"),
        ({"restart_policy": "Sometimes"}, "restart_policy", "OnFailure"),
        ({"nprocPerNode": 8}, "nprocPerNode", "unknown field"),
        ({"env": {"PET_NNODES": "2"}}, "env", "PET_NNODES may not be set"),
        ({"env": {"MASTER_ADDR": "x"}}, "env", "Training Operator sets it"),
        ({"env": {"1BAD": "x"}}, "env.1BAD.[key]", "not a valid environment variable"),
        ({"shm_size": "20"}, "shm_size", "did you mean '20Gi'"),
        ({"image": "has space"}, "image", "is not an image reference"),
        ({"image": {"cuda": "has space"}}, "image.cuda", "is not an image reference"),
        (
            {"procs_per_node": 0},
            "procs_per_node",
            "must be at least 1, or must be 'auto'",
        ),
        ({"restart_policy": "Always"}, "restart_policy", "never succeeds"),
    ],
)
def test_job_field_errors_name_the_field(kw, field, text):
    with pytest.raises(DefinitionError) as exc:
        job(**kw)
    (msg,) = [m for m in messages(exc) if m.split("|")[1] == field]
    assert msg.startswith("PyTorchJob")
    assert text in msg


def test_script_or_command_not_both_and_neither_runs_the_entrypoint():
    with pytest.raises(DefinitionError, match="not both; with neither the image's ENTRYPOINT"):
        job(script=Script.file("t.py"))
    assert job(command=None, args=["--epochs", "1"]).command is None


def test_long_names_that_break_the_operator_services_are_refused():
    # The operator names Services <job>-worker-<i>; "-worker-0" is 9 characters.
    name = "a" * 54
    assert job(name=name, nodes=2).name == name
    assert job(name="a" * 63, nodes=1).nodes == 1
    with pytest.raises(DefinitionError, match="shorten the name to 54"):
        job(name="a" * 55, nodes=2)


def test_resources_messages():
    with pytest.raises(DefinitionError) as exc:
        Resources(cpu=-1, memory="1Gi", gpu=-2)
    text = "\n".join(messages(exc))
    assert "cpu" in text and "negative" in text
    assert "gpu" in text and "must be at least 0" in text
    with pytest.raises(DefinitionError, match="not a Kubernetes quantity"):
        Resources(cpu="lots", memory="1Gi")


def test_volumes_and_tolerations():
    with pytest.raises(DefinitionError, match="used by trainkit"):
        Volume(claim="data", path="/dev/shm")
    with pytest.raises(DefinitionError, match="absolute path"):
        Volume(claim="data", path="data")
    with pytest.raises(DefinitionError, match="mount more than once"):
        job(volumes=[Volume(claim="a", path="/d"), Volume(claim="b", path="/d")])
    with pytest.raises(DefinitionError, match="takes no value"):
        Toleration(key="k", operator="Exists", value="v")


def test_platform_models():
    with pytest.raises(DefinitionError, match="exactly one Argo CD destination"):
        Cluster(name="c", gpus_per_node=8)
    with pytest.raises(DefinitionError, match="extended resource name"):
        Cluster(name="c", server="https://x", gpus_per_node=8, gpu_resource="gpu")
    with pytest.raises(DefinitionError, match="created and kept by Volcano itself"):
        Queue(name="default")
    with pytest.raises(DefinitionError, match="own parent"):
        Queue(name="a", parent="a")
    with pytest.raises(DefinitionError, match="must be at most 65535"):
        Queue(name="a", weight=70000)
    assert Capacity(cpu=2.5).cpu == "2.5"


def test_script_paths_stay_inside_jobs():
    with pytest.raises(DefinitionError, match="relative to the definition file"):
        Script.file("../../etc/passwd")
    with pytest.raises(DefinitionError, match="relative to the definition file"):
        Script.file("/abs/train.py")
    assert Script.file("scripts/train.py").mount_path == "/workspace/train.py"


def test_help_lists_the_fields_with_their_descriptions():
    doc = PyTorchJob.__doc__ or ""
    assert doc.startswith("A distributed PyTorch job")
    assert "\nFields:\n    name: Job name, unique in the team's namespace on each cluster." in doc
    assert "    procs_per_node: Processes per node" in doc
    # The JSON Schema keeps the plain description.
    assert PyTorchJob.model_json_schema()["description"].startswith("A distributed PyTorch job")
    assert "Fields:" not in PyTorchJob.model_json_schema()["description"]


def test_a_misspelt_field_gets_the_closest_real_one():
    with pytest.raises(DefinitionError) as exc:
        job(proc_per_node=2)
    assert messages(exc) == [
        "PyTorchJob 'train'|proc_per_node|unknown field; did you mean 'procs_per_node'?"
    ]
    with pytest.raises(DefinitionError) as exc:
        Cluster(name="c", server="https://c", gpus_per_node=8, tolerations=[{"keys": "x"}])
    assert "did you mean 'key'?" in messages(exc)[0]


@pytest.mark.parametrize("field", ["ttl_seconds", "ttl_seconds_after_finished", "ttl"])
@pytest.mark.parametrize(
    "kind", ["PyTorchJob", "TFJob", "PaddleJob", "XGBoostJob", "JAXJob", "TrainJob"]
)
def test_a_ttl_is_not_mistaken_for_the_deadline(kind, field):
    # difflib's closest field to ttl_seconds is deadline_seconds, which fails a running job:
    # the opposite of keeping a finished one a while. These kinds have no TTL on purpose.
    import trainkit

    base = {"name": "j", "image": "img:1", "command": ["x"]}
    if kind == "TrainJob":
        base = {"name": "j", "runtime": "rt"}
    else:
        base["resources"] = Resources(cpu=1, memory="1Gi")
    with pytest.raises(DefinitionError) as exc:
        getattr(trainkit, kind)(**base, **{field: 60})
    (message,) = messages(exc)
    assert message.endswith(
        f"|{field}|unknown field; {kind}s have no TTL: a finished job stays until its file is "
        "removed, since Argo CD's self-heal would create a job deleted by a TTL again and run "
        "it a second time (deadline_seconds is another thing: it fails a job that runs too long)"
    )


@pytest.mark.parametrize("field", ["ttl_seconds_after_finished", "ttl"])
def test_a_ttl_misspelled_on_an_mpijob_points_to_ttl_seconds(field):
    # An MPIJob's TTL deletes only its launcher's batch Job (model/mpijob.py), so it has one.
    import trainkit

    with pytest.raises(DefinitionError) as exc:
        trainkit.MPIJob(
            name="j", image="img:1", command=["x"], resources=Resources(cpu=1, memory="1Gi"),
            **{field: 60},
        )  # fmt: skip
    (message,) = messages(exc)
    assert message.endswith(f"|{field}|unknown field; did you mean 'ttl_seconds'?")


# --- what IPython and Jupyter complete ------------------------------------------------------


def _public_models() -> list[type]:
    import trainkit
    from trainkit.model.base import TrainkitModel

    found = [getattr(trainkit, n) for n in trainkit.__all__]
    return [c for c in found if isinstance(c, type) and issubclass(c, TrainkitModel)]


def test_constructors_show_their_fields_as_keyword_arguments() -> None:
    """IPython's call tips are inspect.signature: the fields, not (**data)."""
    import inspect

    models = _public_models()
    assert len(models) >= 20
    for cls in models:
        for used in (False, True):  # before and after a first object (pydantic's build)
            if used:
                with contextlib.suppress(TrainkitError):  # required fields missing
                    cls()
            sig = inspect.signature(cls)
            params = list(sig.parameters.values())
            assert [p.name for p in params] == [
                f.alias or n for n, f in cls.model_fields.items()
            ], cls
            assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), cls
            assert "Annotated" not in str(sig) and "Validator" not in str(sig), (cls, str(sig))
    sig = inspect.signature(models[0].__mro__[0])
    assert "data" not in sig.parameters


def test_jedi_completes_the_fields_of_a_job() -> None:
    """jedi (IPython's and Jupyter's completer) reads the class: no private attribute."""
    import jedi

    source = "from trainkit import PyTorchJob\nPyTorchJob("
    (signature,) = jedi.Script(source).get_signatures(2, 11)
    names = [p.name for p in signature.params]
    assert names[:3] == ["name", "run", "image"]
    assert "_defined_at" not in names and "data" not in names
    completions = [c.name for c in jedi.Script(source + "scr").complete(2, 14)]
    assert "script=" in completions


_OWN_FIELD_UNIONS: dict[str, tuple[Any, list[dict[str, object]]]] = {
    # Each union → one valid dict per member.
    "volumes": (
        AnyVolume,
        [
            {"claim": "data", "path": "/data", "read_only": True},
            {"name": "s", "path": "/s", "size": "1Gi", "memory": True},
            {"name": "k", "secret": "k", "path": "/k", "items": {"a": "b"}},
            {"name": "c", "config_map": "c", "path": "/c", "optional": True},
            {"name": "t", "path": "/t", "audience": "vault", "expiration_seconds": 1800},
            {"name": "d", "driver": "csi.example.com", "path": "/d", "fs_type": "ext4"},
            {"name": "h", "host_path": "/mnt/x", "path": "/h"},
        ],
    ),
    "env_refs": (
        EnvRef,
        [
            {"secret": "s", "key": "k", "optional": True},
            {"config_map": "c", "key": "k"},
            {"path": "metadata.name"},
            {"resource": "limits.cpu", "divisor": "1m"},
        ],
    ),
    "env_from": (EnvSource, [{"secret": "s"}, {"config_map": "c"}]),
}
_SHORTCUT = {
    name: create_model("Shortcut", __base__=TrainkitModel, items=(list[union], []))
    for name, (union, _) in _OWN_FIELD_UNIONS.items()
}
_ALONE = {  # the union without by_own_field
    name: create_model("Alone", __base__=TrainkitModel, items=(list[typing.get_args(union)[0]], []))
    for name, (union, _) in _OWN_FIELD_UNIONS.items()
}
_VALUES = ["/data", "x", "1Gi", True, 3, {"a": "b"}, "", "/dev/shm", "../up", None, "limits.cpu"]


@given(data=st.data())
def test_a_member_of_a_union_given_as_a_dict_is_what_the_union_alone_makes_of_it(data) -> None:
    """A dict (as definitions' objects come back from their processes) holding the field only
    one member of the union requires is built as that member (``by_own_field``), not tried
    against each in turn: the same object, and for a bad dict the same problems, as the
    union of the members alone gives."""
    name = data.draw(st.sampled_from(sorted(_OWN_FIELD_UNIONS)))
    members = _OWN_FIELD_UNIONS[name][1]
    keys = sorted({key for member in members for key in member} | {"bogus"})
    base = data.draw(st.sampled_from(members))
    drop = data.draw(st.sets(st.sampled_from(keys), max_size=2))
    add = data.draw(st.dictionaries(st.sampled_from(keys), st.sampled_from(_VALUES), max_size=2))
    value = {**{k: v for k, v in base.items() if k not in drop}, **add}
    assert _built(_SHORTCUT[name], value) == _built(_ALONE[name], value)


def _built(model: type[TrainkitModel], value: dict[str, object]) -> object:
    """Each item's kind and fields, or the problems' fields and messages."""
    try:
        items = model(items=[value]).items  # type: ignore[attr-defined]
    except DefinitionError as e:
        return [(p.field, p.message) for p in e.problems]
    return [(type(v), v.model_dump()) for v in items]


def _subclasses(cls: type[Any]) -> list[type[Any]]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_each_fields_description_is_the_docstring_under_it_as_pydantic_reads_it() -> None:
    """The descriptions (schemas/, help) are read from one parse of each module
    (``field_docs``), not by pydantic's ``use_attribute_docstrings``: the same docstrings."""
    import trainkit.model  # noqa: F401  (every model)

    models = [c for c in _subclasses(TrainkitModel) if c.__module__.startswith("trainkit.")]
    assert len(models) > 50
    for model in models:
        assert field_docstrings(model) == extract_docstrings_from_cls(model, use_inspect=True), (
            model
        )
        own = {name for name in model.__annotations__ if name in model.model_fields}
        for name in own:
            assert model.model_fields[name].description == field_docstrings(model).get(name)


def test_a_model_defined_in_a_function_or_twice_gets_its_field_docstrings() -> None:
    class Local(TrainkitModel):
        size: int = 0
        """How big."""

    if Local.model_fields:

        class Twice(TrainkitModel):
            a: int = 0
            """First."""

    else:

        class Twice(TrainkitModel):  # type: ignore[no-redef]
            b: int = 0
            """Second."""

    assert Local.model_fields["size"].description == "How big."
    assert Twice.model_fields["a"].description == "First."


class _Documented(TrainkitModel):
    width: int = 0
    """How wide."""


@pytest.mark.parametrize("collecting", [True, False])
def test_reading_field_docstrings_keeps_no_syntax_tree_and_leaves_the_collector_as_it_was(
    collecting: bool,
) -> None:
    """Each module's source is parsed once, with the cycle collector paused; what is kept is
    the docstrings, not the tree (whose nodes every full collection would walk again)."""
    import ast
    import gc

    from trainkit.model import field_docs

    field_docs._CLASSES.pop(__name__, None)  # this module: read again
    was = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        assert field_docstrings(_Documented) == {"width": "How wide."}
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if was else gc.disable)()
    seen: set[int] = set()
    todo: list[object] = [field_docs._CLASSES]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        assert not isinstance(obj, ast.AST), "a syntax tree node is kept"
        todo.extend(gc.get_referents(obj))
    assert __name__ in field_docs._CLASSES
