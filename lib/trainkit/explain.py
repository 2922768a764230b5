"""``trainkit explain``: the pods a job becomes on each cluster, as the controllers create them.

Reads the effective model (``trainkit.effective``) of a synthesized tree and
prints it for people (text) or programs (json): image, command, args, env with
where each variable comes from, resources, volumes, world size and the
PodGroup the scheduler must admit.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from .effective import RAY, EffectiveJob, PodSet
from .errors import DefinitionError, Problem, printable
from .load import DefinitionCache, LoadOptions, load_jobs
from .resolve import build_plan
from .resolve.network import describe_grants

__all__ = ["explain_jobs", "format_json", "format_text"]


def explain_jobs(
    jobs_dir: Path,
    job: str,
    *,
    cluster: str | None = None,
    root: Path | None = None,
    options: LoadOptions | None = None,
    cache: DefinitionCache | None = None,
) -> tuple[list[EffectiveJob], list[Problem]]:
    """The effective jobs named ``job`` (``NAME``, ``KIND/NAME`` or the object name
    ``NAME-rN``) on ``cluster`` or every cluster, and the policy problems they have. With
    ``cache``, a definition file whose inputs are unchanged is not run again (``load.cache``)."""
    from .policy import check_policy
    from .synth import effective_jobs, render_groups, rendered_runtimes

    loaded = load_jobs(jobs_dir, root, options=options, cache=cache)
    plan = build_plan(loaded.definitions)
    groups = render_groups(plan)
    everything = effective_jobs(groups)
    chosen = [ej for ej in everything if _matches(ej, job)]
    if cluster is not None:
        clusters = {ej.planned.cluster.name for ej in chosen}
        chosen = [ej for ej in chosen if ej.planned.cluster.name == cluster]
        if not chosen and clusters:
            raise DefinitionError(
                f"{job!r} does not run on cluster {cluster!r}; it runs on "
                + ", ".join(repr(c) for c in sorted(clusters))
            )
    if not chosen:
        names = sorted({f"{ej.kind}/{ej.planned.job.name}" for ej in everything})
        raise DefinitionError(
            f"no job {job!r}; jobs: {', '.join(names) if names else 'none'} "
            "(give NAME, KIND/NAME or the object's name)"
        )
    problems = check_policy(plan, chosen, rendered_runtimes(groups))
    mine = {ej.planned.definition.file for ej in chosen}
    return chosen, [p for p in problems if p.file in mine]


def _matches(ej: EffectiveJob, wanted: str) -> bool:
    name = ej.planned.job.name
    return wanted in (name, ej.name, f"{ej.kind}/{name}", f"{ej.kind}/{ej.name}")


def _quantities(amounts: dict[str, Decimal]) -> dict[str, str]:
    out = {}
    for name, value in sorted(amounts.items()):
        whole = int(value) if value == value.to_integral_value() else None
        if whole is not None and (
            name in ("memory", "ephemeral-storage") or name.startswith("hugepages-")
        ):
            for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20)):
                if whole >= size and whole % size == 0:
                    out[name] = f"{whole // size}{unit}"
                    break
            else:
                out[name] = str(whole)
        else:
            out[name] = str(whole) if whole is not None else format(value.normalize(), "f")
    return out


def _volumes(ps: PodSet) -> list[dict[str, Any]]:
    sources = {v["name"]: v for v in ps.spec.get("volumes") or []}
    out = []
    for m in ps.main.get("volumeMounts") or []:
        v = sources.get(m["name"], {})
        if "configMap" in v:
            source = f"ConfigMap {v['configMap']['name']}"
        elif "persistentVolumeClaim" in v:
            source = f"PersistentVolumeClaim {v['persistentVolumeClaim']['claimName']}"
        elif "secret" in v:
            source = f"Secret {v['secret']['secretName']}"
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            where = "memory" if v["emptyDir"].get("medium") == "Memory" else "the node's disk"
            source = where + (f" ({size})" if size else "")
        elif "hostPath" in v:
            kind = "device" if v["hostPath"].get("type") == "CharDevice" else "directory"
            source = f"the node's {kind} {v['hostPath'].get('path')}"
        elif "csi" in v:
            source = f"CSI driver {v['csi']['driver']}"
        elif "projected" in v:
            tokens = [s["serviceAccountToken"] for s in v["projected"].get("sources") or []]
            source = ", ".join(
                f"ServiceAccount token for {t['audience']!r} ({t['path']})" for t in tokens
            )
        else:
            source = m["name"]
        items = (v.get("secret") or v.get("configMap") or {}).get("items")
        if items:
            source += " keys " + ", ".join(f"{i['key']}→{i['path']}" for i in items)
        if m.get("subPath"):
            source += f" [{m['subPath']}]"
        out.append({"path": m["mountPath"], "source": source, "read_only": bool(m.get("readOnly"))})
    return out


def _cluster_queue(ej: EffectiveJob) -> dict[str, Any] | None:
    """The ClusterQueue's cohort, fair-sharing weight and admission checks, where the job is
    admitted by Kueue."""
    cq = ej.planned.cluster_queue
    if cq is None or ej.workload is None:
        return None
    weight = cq.weight
    return {
        "cohort": cq.cohort,
        "fair_sharing_weight": None if weight is None else format(weight.normalize(), "f"),
        "admission_checks": [
            {"check": r.check, "on_flavors": list(r.on_flavors)} for r in cq.check_rules()
        ],
    }


def _kueue_topology(ej: EffectiveJob) -> dict[str, Any] | None:
    """The topology request Kueue admits the job by, on Kueue."""
    topology = getattr(ej.planned.job, "kueue_topology", None)
    if topology is None or ej.workload is None:
        return None
    return {"level": topology.level, "required": topology.required}


def as_data(ej: EffectiveJob) -> dict[str, Any]:
    """A job's effective pods as plain data (the ``--format json`` document)."""
    pj = ej.planned
    return {
        "kind": ej.kind,
        "name": ej.name,
        "job": pj.job.name,
        "file": pj.definition.file,
        "line": pj.definition.line,
        "cluster": pj.cluster.name,
        "namespace": pj.namespace,
        "nodes": ej.nodes,
        "procs_per_node": ej.procs_per_node,
        "world_size": ej.world_size,
        "world_size_env": ej.world_size_env,
        "gpus": ej.gpus(),
        "deadline": ej.deadline,
        "network": None
        if pj.network is None
        else {
            "profile": pj.network.name,
            "grants": describe_grants(pj.network),
            "networks": list(pj.network.networks),
        },
        "kueue_queue": ej.workload.queue if ej.workload is not None else None,
        "kueue_priority": ej.workload.workload_priority if ej.workload is not None else None,
        "kueue_cluster_queue": _cluster_queue(ej),
        "kueue_topology": _kueue_topology(ej),
        "kueue_pod_sets": None
        if ej.workload is None
        else [
            {"name": w.name, "count": w.count, "requests": _quantities(w.requests)}
            for w in ej.workload.pod_sets
        ],
        "podgroup": None
        if ej.gang is None
        else {
            "name": ej.gang.podgroup,
            "queue": ej.gang.queue,
            "min_member": ej.gang.min_member,
            "requests": _quantities(ej.gang.requests),
            "priority_class": ej.gang.priority_class,
        },
        "completion": None
        if ej.completion is None
        else {
            "succeeds": list(ej.completion.succeeds),
            "needs": ej.completion.needs,
            "backoff_limit": ej.completion.backoff_limit,
            "counts": ej.completion.counts,
        },
        "pods": [
            {
                "role": ps.role,
                "count": ps.count,
                "first_rank": ps.first_rank,
                "runs_ranks": ps.runs_ranks,
                "duty": ps.duty or None,
                "container": ps.container,
                "names": None
                if ps.name_format is None
                else [ps.pod_name(0), ps.pod_name(ps.count - 1)],
                "restart_policy": ps.restart_policy,
                "added_init_containers": [
                    {"name": c.get("name"), "image": c.get("image")}
                    for c in ps.added_init_containers
                ],
                "init_containers": [
                    {
                        "name": c.get("name"),
                        "image": c.get("image"),
                        "sidecar": c.get("restartPolicy") == "Always",
                        "command": c.get("command"),
                        "resources": c.get("resources") or {},
                    }
                    for c in ps.spec.get("initContainers") or []
                ],
                "image": ps.main.get("image"),
                "image_pull_policy": ps.main.get("imagePullPolicy"),
                "image_pull_secrets": [s["name"] for s in ps.spec.get("imagePullSecrets") or []],
                "service_account": ps.spec.get("serviceAccountName"),
                "priority_class": ps.spec.get("priorityClassName"),
                "host_namespaces": [
                    name
                    for name, key in (("network", "hostNetwork"), ("IPC", "hostIPC"))
                    if ps.spec.get(key) is True
                ],
                "resource_claims": [
                    {"name": c.get("name"), "template": c.get("resourceClaimTemplateName")}
                    for c in ps.spec.get("resourceClaims") or []
                ],
                "security_context": ps.spec.get("securityContext"),
                "container_security_context": ps.main.get("securityContext"),
                "gpus_seen": ps.sees_gpus(pj.cluster.gpu_resource, pj.cluster.accelerator),
                "command": ps.main.get("command"),
                "args": ps.main.get("args"),
                "working_dir": ps.main.get("workingDir"),
                "pod_affinity": _pod_affinity(ps.spec.get("affinity") or {}),
                "probes": {
                    kind: ps.main[f"{kind}Probe"]
                    for kind in ("readiness", "liveness", "startup")
                    if f"{kind}Probe" in ps.main
                },
                "ports": [
                    {"name": p.get("name"), "port": p.get("containerPort")}
                    for p in ps.main.get("ports") or []
                ],
                "lifecycle": ps.main.get("lifecycle") or {},
                "termination_grace_period": ps.spec.get("terminationGracePeriodSeconds"),
                "host_aliases": [
                    {"ip": a.get("ip"), "hostnames": list(a.get("hostnames") or [])}
                    for a in ps.spec.get("hostAliases") or []
                ],
                "resources": ps.main.get("resources") or {},
                "volumes": _volumes(ps),
                "node_selector": dict(ps.spec.get("nodeSelector") or {}),
                "tolerations": [_toleration(t) for t in ps.spec.get("tolerations") or []],
                "env": [
                    {
                        "name": e.name,
                        "value": e.value,
                        "from": e.ref or None,
                        "source": e.source,
                        "per_pod": e.per_pod,
                    }
                    for e in ps.env
                ],
                "env_from": [_source(s) for s in ps.main.get("envFrom") or []],
            }
            for ps in ej.pod_sets
        ],
        "jobset": _jobset_metadata(ej),
        "job_metadata": _job_metadata(ej),
        "notes": list(ej.notes),
        "working_dir": _working_dir(ej),
    }


_TRAINING_OPERATOR_KINDS = frozenset({"PyTorchJob", "TFJob", "XGBoostJob", "JAXJob"})


def _job_metadata(ej: EffectiveJob) -> dict[str, Any] | None:
    """The job object's own labels and annotations, and the objects its controller copies
    them to (resolve/access.py cites where); None when it sets none."""
    job = ej.planned.job  # explain reads the model through the effective jobs only
    labels = dict(getattr(job, "labels", {}))
    annotations = dict(getattr(job, "annotations", {}))
    if not labels and not annotations:
        return None
    if ej.kind == "RayJob":
        copied = "KubeRay copies them to the RayCluster it creates"
    elif ej.kind in _TRAINING_OPERATOR_KINDS and ej.gang is not None and annotations:
        copied = "the Training Operator copies the annotations to its Volcano PodGroup"
    else:
        copied = None
    return {"labels": labels, "annotations": annotations, "copied": copied}


def _jobset_metadata(ej: EffectiveJob) -> dict[str, dict[str, str]] | None:
    """A TrainJob's own labels and annotations of its JobSet (none reach a pod)."""
    if ej.kind != "TrainJob":
        return None
    job = ej.planned.job  # explain reads the model through the effective jobs only
    return {
        "labels": dict(getattr(job, "jobset_labels", {})),
        "annotations": dict(getattr(job, "jobset_annotations", {})),
    }


def _working_dir(ej: EffectiveJob) -> dict[str, Any] | None:
    """A RayJob's ``runtime_env.working_dir``: the repository directory shipped to its
    submitter (its pod's ``working-dir`` volume, render/kuberay.py), or the archive Ray
    downloads on every node."""
    env = getattr(ej.planned.job, "runtime_env", None)
    if env is None or env.working_dir is None:
        return None
    if env.local_dir is None:
        return {"archive": env.working_dir}
    files = dict(ej.planned.definition.working_dir)
    out: dict[str, Any] = {
        "directory": env.local_dir,
        "files": sorted(files),
        "bytes": sum(len(t.encode()) for t in files.values()),
        "excludes": list(env.excludes),
        "configmap": None,
        "mounted_at": None,
    }
    for ps in ej.pod_sets:
        for v in ps.spec.get("volumes") or []:
            if v.get("name") == "working-dir" and "configMap" in v:
                out["configmap"] = v["configMap"]["name"]
                mounts = ps.main.get("volumeMounts") or []
                out["mounted_at"] = next(
                    (m["mountPath"] for m in mounts if m.get("name") == "working-dir"), None
                )
    return out


def format_json(jobs: Sequence[EffectiveJob], problems: Sequence[Problem] = ()) -> str:
    doc = {"jobs": [as_data(ej) for ej in jobs], "problems": [str(p) for p in problems]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def format_text(jobs: Sequence[EffectiveJob], problems: Sequence[Problem] = ()) -> str:
    lines: list[str] = []
    for ej in jobs:
        d = as_data(ej)
        lines.append(
            f"{d['kind']} {d['name']} on cluster {d['cluster']}, namespace {d['namespace']} "
            f"({d['file']}:{d['line']})"
        )
        procs = d["procs_per_node"]
        if procs == RAY and not d["nodes"]:
            world = "  no Ray pods of its own: it runs on a RayCluster (see the note)"
        elif procs == RAY:
            world = (
                f"  Ray cluster of {d['nodes']} node(s): Ray places tasks and actors by the "
                "CPUs and GPUs each node has (no fixed world size)"
            )
        else:
            if not str(procs).isdigit():
                procs = f"{procs} (= {d['world_size'] // max(1, d['nodes'])}, one per GPU)"
            world = (
                f"  world size {d['world_size']}: {d['nodes']} node(s) × {procs} process(es) "
                "per node"
            )
        if d["world_size_env"] is not None:
            world += f"; WORLD_SIZE in each pod: {d['world_size_env']}"
        lines.append(world)
        lines.append(f"  GPUs: {d['gpus']} ({ej.planned.cluster.gpu_resource})")
        lines.append(f"  deadline: {d['deadline']}")
        wd = d["working_dir"]
        if wd is not None and "archive" in wd:
            lines.append(
                f"  Ray working_dir: the archive {wd['archive']} (Team.working_dir_sources), "
                "which Ray downloads and unpacks on every node; the driver and every task start "
                "in it"
            )
        elif wd is not None:
            lines.append(
                f"  Ray working_dir: {wd['directory']} ({len(wd['files'])} file(s), "
                f"{wd['bytes']} bytes) in ConfigMap {wd['configmap']}, mounted on the submitter "
                f"at {wd['mounted_at']}; `ray job submit` uploads it, and the driver and every "
                "task start in a copy of it"
                + (f" (excluded: {', '.join(wd['excludes'])})" if wd["excludes"] else "")
            )
        if d["network"] is not None:
            net = d["network"]
            lines.append(f"  network profile {net['profile']}: {net['grants']}")
        pg = d["podgroup"]
        if d["kueue_queue"] is not None:
            sets = ", ".join(f"{w['name']} × {w['count']}" for w in d["kueue_pod_sets"])
            lines.append(
                f"  Kueue admits all {sum(w['count'] for w in d['kueue_pod_sets'])} pods as one "
                f"workload (LocalQueue {d['kueue_queue']} → ClusterQueue {d['kueue_queue']}): "
                f"pod sets {sets}; until then the job stays suspended"
            )
            cq = d["kueue_cluster_queue"]
            if cq is not None and cq["cohort"] is not None:
                weight = (
                    f", fair-sharing weight {cq['fair_sharing_weight']} when the cohort's "
                    "queues compete for what is lent"
                    if cq["fair_sharing_weight"] is not None
                    else ""
                )
                lines.append(
                    f"  ClusterQueue {d['kueue_queue']} is in cohort {cq['cohort']}: beyond its "
                    f"nominal quota it borrows what the cohort's other queues leave unused{weight}"
                )
            if cq is not None and cq["admission_checks"]:
                checks = ", ".join(
                    c["check"]
                    + (f" (on flavors {', '.join(c['on_flavors'])})" if c["on_flavors"] else "")
                    for c in cq["admission_checks"]
                )
                lines.append(f"  admitted only once these AdmissionChecks pass: {checks}")
            tas = d["kueue_topology"]
            if tas is not None:
                how = (
                    "in one domain of it, or the job waits"
                    if tas["required"]
                    else "in as few domains of it as Kueue finds room in"
                )
                lines.append(f"  Kueue places each pod set by topology level {tas['level']}: {how}")
            if d["kueue_priority"] is not None:
                lines.append(
                    f"  Kueue orders and preempts it by WorkloadPriorityClass {d['kueue_priority']}"
                )
        elif pg is None:
            lines.append("  no gang: the default scheduler places each pod on its own")
        else:
            req = ", ".join(f"{k} {v}" for k, v in pg["requests"].items())
            lines.append(
                f"  PodGroup {pg['name']} in queue {pg['queue']}: {pg['min_member']} pods at once, "
                f"requesting {req}"
            )
        own = d["job_metadata"]
        for what in ("labels", "annotations"):
            if own and own[what]:
                pairs = ", ".join(f"{k}={v}" for k, v in own[what].items())
                lines.append(f"  {d['kind']} {what} (on the job object, no pod): {pairs}")
        if own and own["copied"]:
            lines.append(f"  ({own['copied']})")
        jobset = d["jobset"]
        for what in ("labels", "annotations"):
            if jobset and jobset[what]:
                pairs = ", ".join(f"{k}={v}" for k, v in jobset[what].items())
                lines.append(f"  JobSet {what} (on the JobSet only, not its pods): {pairs}")
        if d["completion"] is not None:
            lines.append(f"  {_completion(d['completion'])}")
        for note in d["notes"]:
            lines.append(f"  note: {note}")
        for pod in d["pods"]:
            ranks = (
                pod["duty"]
                if pod["duty"]
                else "starts the ranks, runs none"
                if not pod["runs_ranks"]
                else f"node rank {pod['first_rank']}"
                if pod["count"] == 1
                else f"node ranks {pod['first_rank']}-{pod['first_rank'] + pod['count'] - 1}"
            )
            lines.append(
                f"  {pod['role']} × {pod['count']} ({ranks}), container {pod['container']}"
            )
            pull = [f"pull policy {pod['image_pull_policy']}"] if pod["image_pull_policy"] else []
            pull += [f"pull secret {name}" for name in pod["image_pull_secrets"]]
            if pod["names"] is not None:
                first, last = pod["names"]
                lines.append(f"    pods       {first}" + (f" … {last}" if last != first else ""))
            lines.append(
                f"    image      {pod['image']}" + (f" ({', '.join(pull)})" if pull else "")
            )
            for init in pod["init_containers"]:
                limits = ", ".join(
                    f"{k} {v}" for k, v in (init["resources"].get("limits") or {}).items()
                )
                role = "sidecar    " if init["sidecar"] else "init       "
                when = "beside the job's container" if init["sidecar"] else "before it starts"
                lines.append(
                    f"    {role}{init['name']} ({init['image']}), {when}"
                    + (f"; limits {limits}" if limits else "")
                )
            for init in pod["added_init_containers"]:
                lines.append(
                    f"    init       {init['name']} ({init['image']}), added by the operator"
                )
            if pod["restart_policy"]:
                lines.append(f"    restart    {pod['restart_policy']}")
            if pod["service_account"]:
                lines.append(f"    runs as    ServiceAccount {pod['service_account']}")
            if pod["priority_class"]:
                lines.append(f"    priority   PriorityClass {pod['priority_class']}")
            for claim in pod["resource_claims"]:
                lines.append(
                    f"    claim      {claim['name']} ← a ResourceClaim per pod from "
                    f"ResourceClaimTemplate {claim['template']}"
                )
            if pod["host_namespaces"]:
                lines.append(f"    host       the node's {' and '.join(pod['host_namespaces'])}")
            for level in ("pod", "container"):
                context = pod[
                    "security_context" if level == "pod" else "container_security_context"
                ]
                if context:
                    lines.append(f"    security   {level}: {_security(context)}")
            if pod["command"]:
                lines.append(f"    command    {shlex.join(pod['command'])}")
            if pod["args"]:
                lines.append(f"    args       {shlex.join(pod['args'])}")
            if pod["ports"]:
                named = [
                    f"{p['name']} {p['port']}" if p["name"] else str(p["port"])
                    for p in pod["ports"]
                ]
                lines.append(f"    ports      {', '.join(named)}")
            for rule in pod["pod_affinity"]:
                lines.append(f"    placed     {rule}")
            for kind, probe in pod["probes"].items():
                lines.append(f"    {kind:<10} {_probe(probe)}")
            for key, word in (("postStart", "started"), ("preStop", "pre-stop")):
                if key in pod["lifecycle"]:
                    lines.append(f"    {word:<10} {_hook(pod['lifecycle'][key])}")
            if pod["working_dir"]:
                lines.append(f"    workdir    {pod['working_dir']}")
            if pod["termination_grace_period"] is not None:
                lines.append(
                    f"    stopping   {pod['termination_grace_period']} s after SIGTERM, then killed"
                )
            for alias in pod["host_aliases"]:
                lines.append(f"    /etc/hosts {alias['ip']} {' '.join(alias['hostnames'])}")
            res = pod["resources"]
            limits = ", ".join(f"{k} {v}" for k, v in (res.get("limits") or {}).items())
            same = res.get("limits") == res.get("requests")
            lines.append(f"    resources  {'requests = limits' if same else 'limits'}: {limits}")
            lines.append(f"    sees GPUs  {pod['gpus_seen']}")
            if pod["node_selector"]:
                labels = ", ".join(f"{k}={v}" for k, v in pod["node_selector"].items())
                lines.append(f"    nodes      {labels}")
            for t in pod["tolerations"]:
                lines.append(f"    tolerates  {t}")
            for v in pod["volumes"]:
                ro = " (read-only)" if v["read_only"] else ""
                lines.append(f"    volume     {v['path']} ← {v['source']}{ro}")
            width = max((len(e["name"]) for e in pod["env"]), default=0)
            for e in pod["env"]:
                varies = f", {e['per_pod']}" if e["per_pod"] else ""
                lines.append(
                    f"    env        {e['name']:<{width}} = "
                    f"{'<' + e['from'] + '>' if e['from'] else e['value']}  ({e['source']}{varies})"
                )
            for source in pod["env_from"]:
                lines.append(f"    env from   every key of {source}  (job)")
        lines.append("")
    for p in problems:
        lines.append(f"problem: {p}")
    # Env values and arguments are the definition's: no control character reaches the
    # terminal raw.
    return printable("\n".join(lines).rstrip("\n"), keep="\n") + "\n"


def _pod_affinity(affinity: dict[str, Any]) -> list[str]:
    """Each pod (anti-)affinity term on one line: ``away from pods with a=b, per
    kubernetes.io/hostname (required)``."""
    out = []
    for kind, where in (("podAffinity", "near"), ("podAntiAffinity", "away from")):
        group = affinity.get(kind) or {}
        terms = [
            (t, "required")
            for t in group.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        ]
        terms += [
            (p.get("podAffinityTerm") or {}, f"preferred, weight {p.get('weight')}")
            for p in group.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ]
        for term, how in terms:
            match = (term.get("labelSelector") or {}).get("matchLabels") or {}
            labels = ", ".join(f"{k}={v}" for k, v in match.items())
            out.append(f"{where} pods with {labels}, per {term.get('topologyKey')} ({how})")
    return out


def _hook(hook: dict[str, Any]) -> str:
    """One lifecycle handler in a line."""
    if "exec" in hook:
        return "runs " + " ".join(hook["exec"]["command"])
    if "httpGet" in hook:
        return f"GET :{hook['httpGet']['port']}{hook['httpGet']['path']}"
    return f"sleeps {hook['sleep']['seconds']} s"


def _probe(probe: dict[str, Any]) -> str:
    """A container probe on one line: ``GET :status/healthz every 10 s, killed after 3``."""
    if "exec" in probe:
        how = "runs " + shlex.join(probe["exec"].get("command") or [])
    elif "httpGet" in probe:
        how = f"GET :{probe['httpGet'].get('port')}{probe['httpGet'].get('path', '')}"
    else:
        kind = "TCP" if "tcpSocket" in probe else "gRPC"
        how = f"{kind} :{(probe.get('tcpSocket') or probe.get('grpc') or {}).get('port')}"
    return (
        f"{how} every {probe.get('periodSeconds', 10)} s from "
        f"{probe.get('initialDelaySeconds', 0)} s, failing after "
        f"{probe.get('failureThreshold', 3)} misses"
    )


def _security(context: dict[str, Any]) -> str:
    """A securityContext on one line, in Kubernetes' words: ``runAsUser 1000, …``."""
    parts = []
    for key, value in context.items():
        if key in ("seccompProfile", "appArmorProfile") and isinstance(value, dict):
            value = value.get("localhostProfile") or value.get("type")
        elif key == "capabilities" and isinstance(value, dict):
            parts += [f"{k} capabilities {', '.join(v)}" for k, v in sorted(value.items())]
            continue
        elif isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key} {value}")
    return "; ".join(parts)


def _completion(c: dict[str, Any]) -> str:
    """``succeeds when …; fails …`` of a job's completion."""
    roles = " and ".join(c["succeeds"])
    which = {"all": f"every {roles} pod", "first": f"{roles} 0", "any": f"any {roles} pod"}
    text = f"succeeds when {which.get(c['needs'], roles)} exits 0"
    limit = c["backoff_limit"]
    if limit is None:
        return text + "; no backoff limit: failing pods restart without bound"
    if limit == 0:
        return text + f"; the first failure fails the job ({c['counts']})"
    return text + f"; fails once {limit} restarts are counted ({c['counts']})"


def _toleration(t: dict[str, Any]) -> str:
    """A pod's toleration as kubectl shows taints: ``key=value:Effect`` (``*`` for any)."""
    value = f"={t['value']}" if t.get("operator", "Equal") == "Equal" and "value" in t else ""
    return f"{t.get('key', '*')}{value}:{t.get('effect', '*')}"


def _source(entry: dict[str, Any]) -> str:
    """``Secret 'x'`` for an ``envFrom`` entry."""
    for ref, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        if ref in entry:
            return f"{kind} {entry[ref].get('name')!r}"
    return str(entry)
