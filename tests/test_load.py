from pathlib import Path

import pytest

from trainkit import DefinitionError, PyTorchJob, Queue
from trainkit.load import definition_files, load_jobs


def load(ws):
    return load_jobs(ws.jobs, ws.root).definitions


def problems(ws) -> list[str]:
    with pytest.raises(DefinitionError) as exc:
        load(ws)
    return [str(p) for p in exc.value.problems]


def test_collects_module_level_objects_with_team_file_and_line(bare):
    defs = load(bare)
    job = next(d for d in defs if isinstance(d.obj, PyTorchJob))
    assert (job.file, job.team, job.line) == ("jobs/vision/ddp.py", "vision", 3)
    assert job.files == {"train.py": "print('training')\n"}
    kinds = sorted(type(d.obj).__name__ for d in defs)
    assert kinds == ["ArgoCD", "Cluster", "Cluster", "Cluster", "PyTorchJob", "Queue", "Team"]


def test_lists_of_objects_are_collected_once(bare):
    bare.write(
        "jobs/platform/more.py",
        "from trainkit import Queue\n"
        "queues = [Queue(name=f'q{i}') for i in range(3)]\n"
        "first = queues[0]\n",
    )
    names = [d.obj.name for d in load(bare) if isinstance(d.obj, Queue)]
    assert names == ["q0", "q1", "q2", "research"]


def test_scripts_and_private_files_are_never_imported(bare):
    bare.write("jobs/vision/scripts/helper.py", "raise SystemExit('must not run')\n")
    bare.write("jobs/vision/_shared.py", "raise SystemExit('must not run')\n")
    files = [p.relative_to(bare.jobs).as_posix() for p in definition_files(bare.jobs)]
    assert files == ["platform/platform.py", "vision/ddp.py"]


def test_order_does_not_depend_on_the_file_system(bare):
    for name in ["b", "a", "c"]:
        bare.write(
            f"jobs/platform/{name}.py", f"from trainkit import Queue\nq = Queue(name='{name}')\n"
        )
    names = [d.obj.name for d in load(bare) if isinstance(d.obj, Queue)]
    assert names == ["a", "b", "c", "research"]


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("jobs/vision/broken.py", "job = (\n", "jobs/vision/broken.py:1: syntax error"),
        (
            "jobs/vision/boom.py",
            "x = 1\nraise RuntimeError('no GPU quota file')\n",
            "jobs/vision/boom.py:2: RuntimeError while importing the definition: no GPU quota file",
        ),
        (
            "jobs/vision/typo.py",
            "from trainkit import PyTorchJob, Resources\n\n"
            "j = PyTorchJob(name='t', image='i', command=['x'], nodez=2,\n"
            "               resources=Resources(cpu=1, memory='1Gi'))\n",
            "jobs/vision/typo.py:3: PyTorchJob 't': nodez: unknown field",
        ),
        (
            "jobs/loose.py",
            "x = 1\n",
            "jobs/loose.py: definitions belong in jobs/<team>/ or jobs/platform/",
        ),
        (
            "jobs/vision/cluster.py",
            "from trainkit import Cluster\nc = Cluster(name='x', server='https://x', gpus_per_node=1)\n",
            "jobs/vision/cluster.py:2: Cluster 'x': platform objects belong in jobs/platform/",
        ),
    ],
)
def test_broken_files_are_reported_with_file_and_line(bare, rel, source, expected):
    bare.write(rel, source)
    assert any(p.startswith(expected) for p in problems(bare)), problems(bare)


def test_every_broken_file_is_reported_not_only_the_first(bare):
    bare.write("jobs/vision/a.py", "raise ValueError('a')\n")
    bare.write("jobs/vision/b.py", "def (\n")
    found = problems(bare)
    assert [p.split(":")[0] for p in found] == ["jobs/vision/a.py", "jobs/vision/b.py"]


def test_missing_script_names_the_field(bare):
    (bare.root / "jobs/vision/scripts/train.py").unlink()
    (msg,) = problems(bare)
    assert msg.startswith(
        "jobs/vision/ddp.py:6: PyTorchJob 'ddp': script.path: 'scripts/train.py' not found"
    )


def test_binary_or_huge_scripts_are_refused(bare):
    (bare.root / "jobs/vision/scripts/train.py").write_bytes(b"\xff\xfe")
    assert "not UTF-8" in problems(bare)[0]
    (bare.root / "jobs/vision/scripts/train.py").write_bytes(b"#" * 1_000_001)
    assert "at most 1 MiB" in problems(bare)[0]


def test_missing_jobs_directory(tmp_path: Path):
    with pytest.raises(DefinitionError, match="directory not found"):
        load_jobs(tmp_path / "nope", tmp_path)


def test_a_definition_s_process_inherits_every_model_s_validator(bare):
    # The models defer building their validators to first use (model.base); the origin
    # builds them before it forks, so a definition's process does not build them again
    # (that was about half the CPU of loading the example tree, in every load).
    bare.write(
        "jobs/platform/probe.py",
        "from trainkit.model import TrainkitModel\n"
        "todo, unbuilt = [TrainkitModel], []\n"
        "while todo:\n"
        "    cls = todo.pop()\n"
        "    todo.extend(cls.__subclasses__())\n"
        "    if not cls.__pydantic_complete__:\n"
        "        unbuilt.append(cls.__name__)\n"
        "if unbuilt:\n"
        "    raise RuntimeError(f'validators not built: {sorted(set(unbuilt))}')\n",
    )
    assert len(load(bare)) == 7


def test_a_definition_s_process_collects_cycles_but_not_what_the_origin_holds(bare):
    # The origin makes the models and their validators with the cycle collector paused and
    # then freezes them out of it (gc.freeze): no collection walks them again, there or in a
    # definition's process. A definition's own cycles are collected as anywhere else.
    bare.write(
        "jobs/platform/probe.py",
        "import gc\n"
        "if not gc.isenabled():\n"
        "    raise RuntimeError('the cycle collector is off')\n"
        "if gc.get_freeze_count() < 10_000:\n"
        "    raise RuntimeError(f'{gc.get_freeze_count()} objects frozen')\n",
    )
    assert len(load(bare)) == 7


def test_the_origin_builds_each_validator_after_those_of_the_models_it_holds():
    # pydantic takes a held model's finished schema instead of generating it again inside
    # every model that holds it: leaves first, the origin's validators cost half the CPU.
    from typing import Annotated

    from pydantic import Field

    from trainkit.model import TrainkitModel
    from trainkit.model.base import build_validators

    built: list[str] = []

    class Base(TrainkitModel):
        @classmethod
        def __pydantic_on_complete__(cls) -> None:
            super().__pydantic_on_complete__()
            built.append(cls.__name__)

    class Leaf(Base):
        size: int = 0

    class Mid(Base):
        leaf: Leaf = Leaf()

    class Top(Base):
        mids: list[Mid] | None = None
        leaf: Annotated[Leaf, Field(description="held twice")] = Leaf()

    built.clear()  # Leaf() and Mid() above built theirs
    for cls in (Base, Leaf, Mid, Top):
        cls.__pydantic_complete__ = False  # as deferred, so that each is built again
    build_validators(Base)
    assert built == ["Base", "Leaf", "Mid", "Top"]


_COMPLETION_ORDER = """
import json, sys
from pathlib import Path
from trainkit.model.base import TrainkitModel, _models_in
done = []
on_complete = TrainkitModel.__pydantic_on_complete__.__func__
TrainkitModel.__pydantic_on_complete__ = classmethod(lambda cls: (done.append(cls), on_complete(cls)))
from trainkit.load import load_jobs
models, todo = set(), [TrainkitModel]
while todo:
    cls = todo.pop()
    models.add(cls)
    todo.extend(set(cls.__subclasses__()) - models)
before = {cls for cls in models if cls.__pydantic_complete__}  # a default value built them
assert load_jobs(Path(sys.argv[1]), Path(sys.argv[2])).definitions
pos = {cls: -1 for cls in before} | {cls: i for i, cls in enumerate(done)}
late = []
for cls in done:
    held = set()
    for info in cls.__pydantic_fields__.values():
        _models_in(info.annotation, models, held)
    late += [f"{cls.__name__} before {h.__name__}" for h in held - {cls} if pos.get(h, 1 << 30) > pos[cls]]
print(json.dumps({"built": len(done), "late": late}))
"""


def test_the_loader_builds_a_kind_s_validator_after_those_of_the_models_it_holds(bare):
    # As the origin does (above), in a process of its own: this one's validators are built.
    # In the order first used, PyTorchJob's was built first, each held model's schema
    # generated again inside it (and inside every other kind holding the same model).
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _COMPLETION_ORDER, str(bare.jobs), str(bare.root)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    result = json.loads(done.stdout)
    assert result["built"] > 10 and result["late"] == [], result


def test_a_definition_s_process_inherits_the_loader_s_code_frozen(bare):
    # The origin imports the code that runs definitions (worker, calls) before it forks and
    # freezes it with the models, not each definition's process again.
    bare.write(
        "jobs/platform/probe.py",
        "import gc, sys\n"
        "tracked = {id(o) for o in gc.get_objects()}\n"
        "shared = {'worker': sys.modules['trainkit.load.worker'].load_group,\n"
        "          'calls': sys.modules['trainkit.load.calls'].Calls}\n"
        "fresh = sorted(name for name, obj in shared.items() if id(obj) in tracked)\n"
        "if fresh:\n"
        "    raise RuntimeError(f'not frozen in the origin: {fresh}')\n",
    )
    assert len(load(bare)) == 7
