"""Every controller expectation (``tests/expectations/``) run through trainkit's effective
model: what each controller's own tests assert, case by case, must be what ``effective/``
(and the renderer, for a definition) says the controller does."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from decimal import Decimal
from importlib import import_module
from typing import Any

import pytest

from expectations import (
    ABSENT,
    PRESENT,
    Case,
    Command,
    Definition,
    Env,
    FieldRef,
    Gang,
    Health,
    InitContainers,
    Kueue,
    Manifest,
    NoGang,
    PodNames,
    Pods,
    Port,
    RayStart,
    Refused,
    Resources,
    Restart,
    Succeeds,
    Volume,
    World,
)
from test_argocd_health import run_health
from trainkit import (
    Capacity,
    Cluster,
    ClusterQueue,
    DefinitionError,
    FlavorQuota,
    JAXJob,
    MPIJob,
    PaddleJob,
    PyTorchJob,
    Queue,
    RayCluster,
    RayJob,
    ResourceFlavor,
    Team,
    TFJob,
    TrainJob,
    XGBoostJob,
)
from trainkit.effective import EffectiveJob, EnvVar, effective_job
from trainkit.health import health_checks
from trainkit.kube.quantities import parse_quantity
from trainkit.load import Definition as Loaded
from trainkit.policy import check_policy
from trainkit.resolve import PlannedJob, build_plan
from trainkit.synth import effective_jobs, render_groups, rendered_runtimes

MODULES = (
    "training_operator",
    "training_operator_xgb_jax",
    "paddle_operator",
    "volcano",
    "kueue",
    "mpi_operator",
    "trainer",
    "kuberay",
    "kueue_trainjob",
    "kueue_rayjob",
    "kuberay_raycluster",
)
P = "jobs/platform/p.py"


def all_cases() -> list[Case]:
    return [c for name in MODULES for c in import_module(f"expectations.{name}").CASES]


CASES = all_cases()


# Differences these cases found in effective/, each fixed by a commit of issue 25 that removes
# its entries (strict: a case that passes before its fix fails here).
PENDING: dict[str, str] = {}


def _param(case: Case) -> Any:
    reason = case.defect or (f"issue 25: {PENDING[case.id]}" if case.id in PENDING else "")
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(case, id=case.id, marks=marks)


# --- inputs -----------------------------------------------------------------------------------


def _platform(d: Definition) -> list[Loaded]:
    cluster: dict[str, Any] = {"name": "c", "server": "https://c", "gpus_per_node": 8}
    cluster["scheduler"] = d.scheduler
    if d.operators is not None:
        cluster["operators"] = list(d.operators)
    cluster |= dict(d.cluster)
    out = [Loaded(Cluster(**cluster), P, "platform")]
    if d.scheduler == "kueue":
        quota = Capacity(cpu=1024, memory="8Ti", gpu=64)
        out += [
            Loaded(ResourceFlavor(name="f"), P, "platform"),
            Loaded(ClusterQueue(name="q", flavors=[FlavorQuota(flavor="f", quota=quota)]), P, "p"),
        ]
    elif d.scheduler == "volcano" and not any(isinstance(o, Queue) for o in d.platform):
        capability = Capacity(**(d.capability or {"gpu": 64}))
        out.append(Loaded(Queue(name="q", capability=capability), P, "platform"))
    out += [Loaded(o, P, "platform") for o in d.platform]
    queues = [d.queue] if d.scheduler != "default" else []
    out.append(Loaded(Team(name="t", queues=queues, **d.team), P, "platform"))
    return out


def _from_definition(d: Definition) -> tuple[EffectiveJob | None, list[str]]:
    """The effective job trainkit makes of a definition, and what synth would refuse."""
    try:
        job = d.job() if callable(d.job) else d.job
        files = {"train.py": "x"} if getattr(job, "script", None) is not None else {}
        plan = build_plan([*_platform(d), Loaded(job, "jobs/t/j.py", "t", files=files)])
        groups = render_groups(plan)
        jobs = effective_jobs(groups)
    except DefinitionError as exc:
        return None, [str(p) for p in exc.problems]
    problems = [str(p) for p in check_policy(plan, jobs, rendered_runtimes(groups))]
    mine = [ej for ej in jobs if ej.planned.definition.file == "jobs/t/j.py"]
    return (mine[0] if mine else None), problems


_KINDS: Mapping[str, Any] = {
    "PyTorchJob": PyTorchJob,
    "TFJob": TFJob,
    "PaddleJob": PaddleJob,
    "MPIJob": MPIJob,
    "RayJob": RayJob,
    "RayCluster": RayCluster,
    "TrainJob": TrainJob,
    "XGBoostJob": XGBoostJob,
    "JAXJob": JAXJob,
}


def _from_manifest(m: Manifest) -> EffectiveJob:
    """The effective job of an object as the controller receives it. The planned job is a
    stand-in carrying what the model reads besides the object: kind, name, namespace and
    the cluster's GPU resource (as ``trainkit plan`` reads deployed objects)."""
    kind, name = str(m.body["kind"]), str(m.body["metadata"]["name"])
    found = re.fullmatch(r"(.+)-r([0-9]+)", name) if kind == "TrainJob" else None
    fields = {"name": found[1], "run": int(found[2])} if found else {"name": name, "run": None}
    job = _KINDS[kind].model_construct(**fields)
    cluster = Cluster.model_construct(name="c", gpu_resource=m.gpu_resource)
    planned = PlannedJob(job, Loaded(job, "upstream", "t"), cluster, m.namespace, None)
    body = {**m.body, "spec": m.body["spec"]}
    return effective_job(planned, body, dict(m.runtime) if m.runtime is not None else None)


# --- checks -----------------------------------------------------------------------------------


def _pod_set(ej: EffectiveJob, role: str) -> Any:
    for ps in ej.pod_sets:
        if ps.role == role:
            return ps
    raise AssertionError(f"no role {role!r}; roles: {[ps.role for ps in ej.pod_sets]}")


def _env_value(found: EnvVar | None) -> Any:
    if found is None:
        return ABSENT
    if found.value_from is not None:
        ref = found.value_from.get("fieldRef")
        if ref is not None:
            return FieldRef(str(ref.get("fieldPath")))
        return found.value_from
    return found.value


def _quantities(amounts: Mapping[str, Decimal]) -> dict[str, Decimal]:
    return {k: v for k, v in amounts.items() if v}


def _parsed(amounts: Mapping[str, str]) -> dict[str, Decimal]:
    out = {}
    for k, v in amounts.items():
        q = parse_quantity(v)
        assert q is not None, v
        out[k] = q
    return _quantities(out)


def differences(ej: EffectiveJob | None, problems: list[str], check: Any) -> Iterator[str]:
    """What ``ej`` (or the refusal ``problems``) says against one check."""
    if isinstance(check, Refused):
        if not any(check.text in p for p in problems):
            yield f"not refused with {check.text!r}: {problems}"
        return
    if ej is None:
        yield f"no effective job: {problems}"
        return
    if isinstance(check, Pods):
        got = {ps.role: ps.count for ps in ej.pod_sets}
        if got != dict(check.counts):
            yield f"pods {got}, upstream {dict(check.counts)}"
    elif isinstance(check, PodNames):
        for (role, index), name in check.names.items():
            got = _pod_set(ej, role).pod_name(index)
            if got != name:
                yield f"{role} {index} is named {got!r}, upstream {name!r}"
    elif isinstance(check, Env):
        ps = _pod_set(ej, check.role)
        env: dict[str, EnvVar] = {}
        for e in ps.env_of(check.index):
            env[e.name] = e  # the kubelet keeps the last of a repeated name
        for name, want in check.values.items():
            got = _env_value(env.get(name))
            if want is PRESENT and got is not ABSENT:
                continue
            if got != want:
                yield f"{check.role} {check.index}: {name}={got!r}, upstream {want!r}"
    elif isinstance(check, Port):
        ps = _pod_set(ej, check.role)
        ports = [(p.get("name"), int(p["containerPort"])) for p in ps.main.get("ports") or []]
        if not any(port == check.port and check.name in (None, n) for n, port in ports):
            yield f"{check.role} ports {ports}, upstream {(check.name, check.port)}"
    elif isinstance(check, Command):
        got = _pod_set(ej, check.role).main.get("command")
        if (tuple(got) if got else None) != check.command:
            yield f"{check.role} command {got}, upstream {check.command}"
    elif isinstance(check, Volume):
        ps = _pod_set(ej, check.role)
        mounts = {m["mountPath"]: m["name"] for m in ps.main.get("volumeMounts") or []}
        volumes = {v["name"]: v for v in ps.spec.get("volumes") or []}
        got = volumes.get(mounts.get(check.path, ""))
        source = {k: v for k, v in (got or {}).items() if k != "name"}
        if source != dict(check.source):
            yield f"{check.role} {check.path} from {source}, upstream {dict(check.source)}"
    elif isinstance(check, RayStart):
        env = {e.name: e.value for e in _pod_set(ej, check.role).env}
        params: dict[str, str] = {}
        for token in env.get("KUBERAY_GEN_RAY_START_CMD", "").split():
            if token.startswith("--"):
                name, _, value = token[2:].partition("=")
                params[name] = value or "true"
        for name, want in check.params.items():
            got = params.get(name, ABSENT)
            if got != want:
                yield f"{check.role} ray start --{name}: {got!r}, upstream {want!r}"
    elif isinstance(check, Resources):
        res = _pod_set(ej, check.role).main.get("resources") or {}
        for part, want in (("requests", check.requests), ("limits", check.limits)):
            got = _quantities(_parsed({k: str(v) for k, v in (res.get(part) or {}).items()}))
            if got != _parsed(want):
                yield f"{check.role} {part} {got}, upstream {_parsed(want)}"
    elif isinstance(check, InitContainers):
        ps = _pod_set(ej, check.role)
        got = tuple(c.get("name") for c in ps.added_init_containers)
        if got != check.names:
            yield f"{check.role} init containers {got}, upstream {check.names}"
    elif isinstance(check, Restart):
        got = _pod_set(ej, check.role).restart_policy
        if got != check.policy:
            yield f"{check.role} restartPolicy {got}, upstream {check.policy}"
    elif isinstance(check, Succeeds):
        c = ej.completion
        got = None if c is None else (c.succeeds, c.needs, c.backoff_limit)
        want = (check.roles, check.needs, check.backoff_limit)
        if got != want:
            yield f"completion {got}, upstream {want}"
    elif isinstance(check, World):
        got = (ej.procs_per_node, ej.world_size)
        if got != (check.procs_per_node, check.world_size):
            yield f"procs per node and world size {got}, upstream {check}"
    elif isinstance(check, NoGang):
        if ej.gang is not None:
            yield f"a PodGroup {ej.gang}, upstream none"
    elif isinstance(check, Gang):
        g = ej.gang
        if g is None:
            yield "no PodGroup"
            return
        got = (g.podgroup, g.min_member, g.queue)
        if got != (check.podgroup, check.min_member, check.queue):
            yield f"PodGroup {got}, upstream {(check.podgroup, check.min_member, check.queue)}"
        if check.min_resources is not None:
            want = _parsed(check.min_resources)
            if _quantities(g.requests) != want:
                yield f"minResources {_quantities(g.requests)}, upstream {want}"
        if check.priority_class is not None and g.priority_class != check.priority_class:
            yield f"priorityClassName {g.priority_class!r}, upstream {check.priority_class!r}"
    elif isinstance(check, Kueue):
        w = ej.workload
        if w is None:
            yield "no Kueue workload"
            return
        got_sets = tuple((ps.name, ps.count) for ps in w.pod_sets)
        if (w.queue, got_sets) != (check.queue, check.pod_sets):
            yield f"workload {(w.queue, got_sets)}, upstream {(check.queue, check.pod_sets)}"
        for name, amounts in (check.requests or {}).items():
            (ps,) = [p for p in w.pod_sets if p.name == name] or [None]
            got_req = _quantities(ps.requests) if ps is not None else None
            if got_req != _parsed(amounts):
                yield f"pod set {name} requests {got_req}, upstream {_parsed(amounts)}"
        if check.priority_class is not None and (w.priority_class or "") != check.priority_class:
            yield f"workload priority {w.priority_class!r}, upstream {check.priority_class!r}"
    elif hasattr(check, "differences"):  # a check that compares itself (mpi_checks)
        yield from check.differences(ej)
    else:  # pragma: no cover - a new check type without its comparison
        raise AssertionError(f"unknown check {check!r}")


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    return health_checks()


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_upstream_case(case: Case, scripts: dict[str, str]) -> None:
    ej: EffectiveJob | None = None
    problems: list[str] = []
    if isinstance(case.given, Definition):
        ej, problems = _from_definition(case.given)
    elif isinstance(case.given, Manifest):
        ej = _from_manifest(case.given)
    found: list[str] = []
    for check in case.expect:
        if isinstance(check, Health):
            obj: dict[str, Any] = {"kind": check.key.rsplit("_", 1)[-1]}
            if check.status is not None:
                obj["status"] = check.status
            out = run_health(scripts[check.key], obj)
            if out["status"] != check.health or (
                check.message is not None and check.message not in out["message"]
            ):
                found.append(f"health {out}, expected {check.health} {check.message or ''}")
            continue
        found += differences(ej, problems, check)
    assert not found, f"{case.source}\n" + "\n".join(found)


# --- the table itself ---------------------------------------------------------------------------


def _kind(case: Case) -> str:
    if case.kind:
        return case.kind
    given = case.given
    if isinstance(given, Definition):
        return type(given.job).__name__
    if isinstance(given, Manifest):
        return str(given.body["kind"])
    return ""


def _category(check: Any) -> str:
    if hasattr(check, "category"):  # a check that names its own (mpi_checks)
        return str(check.category)
    if isinstance(check, Pods | PodNames | World):
        return "counts"
    if isinstance(check, Env | Port | Command | Volume | Resources | RayStart):
        return "env"
    if isinstance(check, Gang | NoGang | Kueue | Refused):
        return "admission"
    if isinstance(check, Restart | Succeeds | InitContainers | Health):
        return "failure"
    raise AssertionError(check)


KINDS = (
    "PyTorchJob",
    "TFJob",
    "PaddleJob",
    "PaddleJob (paddle-operator)",
    "MPIJob",
    "TrainJob",
    "RayJob",
    "RayCluster",
    "XGBoostJob",
    "JAXJob",
)


def test_the_table_covers_every_kind_trainkit_generates() -> None:
    covered: dict[str, set[str]] = {k: set() for k in KINDS}
    for case in CASES:
        kind = _kind(case)
        if kind in covered:
            covered[kind] |= {_category(c) for c in case.expect}
    missing = {k: {"counts", "env", "admission", "failure"} - got for k, got in covered.items()}
    assert not {k: v for k, v in missing.items() if v}, missing


def test_cases_are_many_unique_and_cite_their_source() -> None:
    ids = Counter(c.id for c in CASES)
    assert not [i for i, n in ids.items() if n > 1], ids.most_common(3)
    assert len(CASES) > 100, len(CASES)
    for case in CASES:
        assert case.source.file.endswith("_test.go") or "(no upstream test)" in case.source.case, (
            case.id
        )
        assert case.expect, case.id
        if case.defect:
            assert case.defect.startswith("issue 24: "), case.id
