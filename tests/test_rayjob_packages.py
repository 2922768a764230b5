"""Where a RayJob's runtime_env packages come from: only the platform's indexes and sources.

Ray 2.60 writes each ``runtime_env.pip`` entry as a line of a requirements file and runs
``pip install -r`` on it in the pod's environment plus ``env_vars``
(python/ray/_private/runtime_env/pip.py, dependency_utils.py): an entry can be a pip option,
a URL, several lines, or a variable to expand. The oracle of the property test is pip's own
requirements-file reader (pip/_internal/req/req_file.py, the pip of this environment).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kind_fixtures import planned, render
from trainkit import (
    ModelError,
    Policy,
    RayJob,
    Resources,
    RuntimeEnv,
    Script,
    SecretEnv,
    SecretKey,
    WorkerGroup,
)
from trainkit.errors import DefinitionError
from trainkit.model.pip_requirements import direct_reference, requirement_problem
from trainkit.synth.layout import check_cluster_truth, render_groups

KUBERAY = {"operators": ["kuberay"]}
INDEX = "https://pypi.example.com/simple/"
MIRROR = "https://mirror.example.com/pypi/simple/"
WHEELS = "https://files.example.com/wheels/"


def job(**kw: Any) -> RayJob:
    fields: dict[str, Any] = {
        "name": "rj",
        "image": "rayproject/ray:2.60.0",
        "script": Script.file("train.py"),
        "head": Resources(cpu=4, memory="16Gi"),
        "workers": [WorkerGroup(name="cpu", nodes=1, resources=Resources(cpu=4, memory="8Gi"))],
    }
    return RayJob(**(fields | kw))


def policy_problems(j: RayJob, team: dict[str, Any] | None = None, **rules: Any) -> list[Any]:
    """The policy problems of ``j`` under ``Policy(**rules)``."""
    plan = planned(j, team, Policy(**rules), **KUBERAY)
    try:
        check_cluster_truth(plan, render_groups(plan))
    except DefinitionError as e:
        return list(e.problems)
    return []


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("--index-url https://evil.example/simple", "is pip's --index-url option, which would"),
        ("-i https://evil.example/simple", "is pip's -i option, which would choose where"),
        ("--extra-index-url=https://evil.example/", "is pip's --extra-index-url option"),
        ("--trusted-host evil.example", "is pip's --trusted-host option"),
        ("-f https://evil.example/links/", "is pip's -f option"),
        ("--find-links=/tmp/wheels", "is pip's --find-links option"),
        ("-r https://evil.example/req.txt", "is pip's -r option, which reads more requirements"),
        (
            "-e git+https://evil.example/x.git#egg=x",
            "is pip's -e option, which installs a checkout",
        ),
        ("numpy --hash=sha256:00", "holds the pip option --hash, which trainkit does not pass"),
        ("git+https://evil.example/x.git", "is a URL or path, which pip would install from"),
        ("https://evil.example/x-1.0-py3-none-any.whl", "is a URL or path"),
        ("file:///tmp/x.whl", "is a URL or path"),
        ("./vendored/x", "is a URL or path"),
        ("x-1.0.tar.gz", "names a file ('x-1.0.tar.gz')"),
        ("x.whl", "names a file ('x.whl'), which pip would install from a path"),
        ("numpy\n--index-url https://evil.example/", "holds '\\n': Ray writes each entry as a"),
        ("numpy\r-i https://evil.example/", "holds '\\r'"),
        ("${EVIL}", "holds '$': pip expands ${VAR} in a requirements file"),
        ("numpy \\", "holds '\\': pip joins a line ending in it with the next"),
        ("numpy # pinned", "holds a comment ('#' after a space)"),
        ("", "is empty; give a package"),
        ("numpy===", "is not a requirement (PEP 508"),
    ],
)
def test_a_pip_entry_that_is_not_a_requirement_is_refused(entry: str, says: str) -> None:
    with pytest.raises(ModelError) as e:
        RuntimeEnv(pip=["datasets==3.0.1", entry])
    message = str(e.value)
    assert "RuntimeEnv: pip[1]: " in message
    assert says in message, message


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("py_modules", ["s3://bucket/mod.zip"], "the job's code comes from the repository"),
        ("conda", {"dependencies": ["pip", {"pip": ["x"]}]}, "packages come through pip=[...]"),
        ("uv", ["x"], "packages come through pip=[...], by name, from the platform's indexes"),
        ("image_uri", "evil.example/img:1", "which the platform's Policy.registries check"),
        ("java_jars", ["https://evil.example/x.jar"], "comes from the repository"),
        ("pip_install_options", ["-i", "x"], "trainkit writes pip's options from the"),
    ],
)
def test_runtime_env_fields_that_fetch_from_elsewhere_are_refused(
    field: str, value: object, says: str
) -> None:
    with pytest.raises(ModelError) as e:
        RuntimeEnv(**{field: value})
    message = str(e.value)
    assert f"RuntimeEnv({field}=...) is not offered: Ray would fetch code or packages" in message
    assert says in message, message


def test_requirements_by_name_and_direct_references_pass_the_model() -> None:
    env = RuntimeEnv(
        pip=[
            "datasets==3.0.1",
            "torch[cuda]>=2.5,<3; python_version >= '3.10'",
            "lib @ https://files.example.com/wheels/lib-1.0-py3-none-any.whl",
        ]
    )
    assert [direct_reference(e) for e in env.pip] == [
        None,
        None,
        "https://files.example.com/wheels/lib-1.0-py3-none-any.whl",
    ]


def test_the_platform_s_indexes_are_pip_s_options_in_the_rayjob() -> None:
    from ray._private.runtime_env.validation import parse_and_validate_pip

    j = job(runtime_env=RuntimeEnv(pip=["datasets==3.0.1"]))
    body, _ = render(j, None, Policy(package_indexes=[INDEX, MIRROR]), **KUBERAY)
    env = yaml.safe_load(body["spec"]["runtimeEnvYAML"])
    options = [
        "--disable-pip-version-check", "--no-cache-dir", "--index-url", INDEX,
        "--extra-index-url", MIRROR,
    ]  # fmt: skip
    assert env["pip"] == {"packages": ["datasets==3.0.1"], "pip_install_options": options}
    # Ray 2.60 accepts the form and keeps the options (python/ray/_private/runtime_env/
    # validation.py parse_and_validate_pip; pip.py passes them to `pip install`).
    assert parse_and_validate_pip(env["pip"])["pip_install_options"] == options
    # Without indexes the list form stays (the image's pip configuration decides).
    body, _ = render(j, **KUBERAY)
    assert yaml.safe_load(body["spec"]["runtimeEnvYAML"])["pip"] == ["datasets==3.0.1"]


def test_a_direct_reference_needs_the_platform_s_source() -> None:
    url = f"{WHEELS}lib-1.0-py3-none-any.whl"
    j = job(runtime_env=RuntimeEnv(pip=[f"lib @ {url}"]))
    (p,) = policy_problems(j)
    assert (p.file, p.obj, p.field) == ("jobs/t/j.py", "RayJob 'rj'", "runtime_env")
    assert p.message == (
        f"runtime_env.pip[0] 'lib @ {url}': the URL is not under a source the platform allows "
        "(Policy.package_sources: none); give the package by name (from the platform's "
        "indexes), or ask the platform team to add its source to Policy.package_sources "
        "(jobs/platform/p.py)"
    )
    assert policy_problems(j, package_sources=[WHEELS]) == []
    # A prefix pins the host and path: another host, a user before the host and a climb out
    # of the path are not under it.
    for bad, says in [
        ("https://files.example.com.evil.example/wheels/x.whl", "is not under a source"),
        ("https://files.example.com@evil.example/wheels/x.whl", "names a user or password"),
        (f"{WHEELS}../../private/x.whl", "has a '..' or '.' path segment"),
        (f"{WHEELS}%2e%2e/private/x.whl", "has a '..' or '.' path segment"),
    ]:
        (p,) = policy_problems(job(runtime_env=RuntimeEnv(pip=[f"x @ {bad}"])))
        assert says in p.message, (bad, p.message)
    vcs = "lib @ git+https://git.example.com/ml/lib.git@v1"
    assert policy_problems(job(runtime_env=RuntimeEnv(pip=[vcs]))) != []
    ok = policy_problems(
        job(runtime_env=RuntimeEnv(pip=[vcs])), package_sources=["git+https://git.example.com/ml/"]
    )
    assert ok == []


@pytest.mark.parametrize(
    ("kw", "team", "field", "where"),
    [
        ({"env": {"PIP_INDEX_URL": "https://evil.example/"}}, None, "env.PIP_INDEX_URL", "env"),
        ({"env": {"PIP_CONFIG_FILE": "/workspace/pip.conf"}}, None, "env.PIP_CONFIG_FILE", "env"),
        ({"env": {"HTTPS_PROXY": "http://evil.example:3128"}}, None, "env.HTTPS_PROXY", "env"),
        (
            {"env_refs": {"PIP_EXTRA_INDEX_URL": SecretKey(secret="s", key="k")}},
            {"secrets": {"s": ["k"]}},
            "env_refs.PIP_EXTRA_INDEX_URL",
            "env_refs",
        ),
        (
            {"env_from": [SecretEnv(secret="s")]},
            {"secrets": {"s": ["PIP_FIND_LINKS"]}},
            "env_from",
            "the env_from sources",
        ),
    ],
)
def test_a_variable_that_steers_pip_is_refused_where_ray_installs_packages(
    kw: dict[str, Any], team: dict[str, Any] | None, field: str, where: str
) -> None:
    name = field.rsplit(".", 1)[-1] if "." in field else "PIP_FIND_LINKS"
    j = job(runtime_env=RuntimeEnv(pip=["datasets==3.0.1"]), **kw)
    (p,) = policy_problems(j, team, package_indexes=[INDEX])
    assert p.field == field
    assert p.message == (
        f"{name} would change where pip installs runtime_env.pip from, or whom it trusts (Ray "
        "runs pip with the pod's environment and runtime_env.env_vars); packages come from the "
        f"platform's indexes (Policy.package_indexes, jobs/platform/p.py): remove it from {where}"
    )
    # Without packages to install, Ray runs no pip: the variable is the job's business.
    assert policy_problems(job(**kw), team) == []


def test_a_runtime_env_variable_that_steers_pip_is_refused() -> None:
    env = RuntimeEnv(pip=["datasets"], env_vars={"UV_INDEX_URL": "x", "PIP_TRUSTED_HOST": "y"})
    problems = policy_problems(job(runtime_env=env))
    assert [(p.field, p.message.split(" ", 1)[0]) for p in problems] == [
        ("runtime_env", "PIP_TRUSTED_HOST"),
        ("runtime_env", "UV_INDEX_URL"),
    ]
    assert all(p.message.endswith("remove it from runtime_env.env_vars") for p in problems)


@pytest.mark.parametrize(
    ("rules", "says"),
    [
        ({"package_indexes": ["http://pypi.example.com/simple/"]}, "is not a package index URL"),
        ({"package_indexes": ["https://u:p@pypi.example.com/simple/"]}, "not a package index"),
        ({"package_indexes": ["https://pypi.example.com/simple"]}, "ending in '/'"),
        ({"package_sources": ["https://files.example.com"]}, "is not a source prefix"),
        ({"package_sources": ["https://files.example.com/a/../"]}, "has a '.' or '..' segment"),
    ],
)
def test_the_policy_s_indexes_and_sources_must_be_plain_https_prefixes(
    rules: dict[str, Any], says: str
) -> None:
    with pytest.raises(ModelError) as e:
        Policy(**rules)
    assert says in str(e.value)


# --- property: what the model accepts, pip reads as exactly one requirement ----------------

_PIECES = st.sampled_from(
    [
        "numpy", "torch", "a", "x-y.z_w", "[cuda]", "==1.0", ">=2", ",<3", "~=1.4", " ", "  ",
        "; python_version >= '3.8'", " @ ", "https://files.example.com/w/x.whl", "git+https://",
        "file:", "-", "--", "-i", "--index-url", "-r", "-e", "-f", "--hash=sha256:00", "=",
        "#", " #", "\n", "\r", "\t", "\\", "$", "${X}", "./", "/", "..", ".whl", ".tar.gz",
        "'", '"', "\x0c", "\u2028", "\x85",
    ]
)  # fmt: skip


def _pip_reads(entry: str) -> tuple[str, Any]:
    """The one requirement pip reads from the line Ray writes for ``entry``, and its link."""
    from pip._internal.req.constructors import install_req_from_line
    from pip._internal.req.req_file import build_parser, get_line_parser, preprocess

    lines = list(preprocess(entry + "\n"))
    assert len(lines) == 1, lines
    args, opts = get_line_parser(None)(lines[0][1])
    defaults = build_parser().get_default_values()
    defaults.index_url = None
    assert vars(opts) == vars(defaults), "pip read options"
    assert args, "pip read no requirement"
    return args, install_req_from_line(args).link


@st.composite
def _entries(draw: st.DrawFn) -> str:
    """A requirement (by name or direct reference), then up to three pieces inserted
    anywhere: options, URLs, line breaks, comments, variables."""
    text = draw(st.sampled_from(["numpy", "x-y.z_w", "Torch", "lib"]))
    text += draw(st.sampled_from(["", "[cuda]", "[a,b]"]))
    url = draw(
        st.sampled_from(["", "https://files.example.com/w/x.whl", "git+https://g.example/x.git@v1"])
    )
    if url:
        text += " @ " + url
    else:
        text += draw(st.sampled_from(["", "==1.0", ">=2,<3", " ~= 1.4"]))
    text += draw(st.sampled_from(["", "; python_version >= '3.8'", " ; sys_platform == 'linux'"]))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(_PIECES | st.text(max_size=2)) + text[i:]
    return text


@settings(max_examples=400, deadline=None)
@given(entry=_entries() | st.lists(_PIECES | st.text(max_size=3), max_size=8).map("".join))
@example(entry="numpy\n-i https://evil.example/")
@example(entry="numpy -i https://evil.example/")
@example(entry="x @ https://files.example.com/w/x.whl")
@example(entry="numpy; python_version >= '3.8'")
@example(entry="x-y.z_w @ git+https:numpy//g.example/x.git@v1")  # pip's packaging refuses it
@example(entry="numpy @ https://[files.example.com/w/x.whl")  # pip's urlsplit refuses these
@example(entry="numpy @ https://[cuda]files.example.com/w/x.whl")
@example(entry="numpy[cuda] @ git+https:///g.example/x.git@v1")  # no host: pip refuses it
@example(entry="x[a]====1.0https://files.example.com/w/x.whl")  # pip: a file to install
@example(entry="0_")  # not a PEP 508 name; newer packaging takes it, pip's does not
def test_an_accepted_entry_is_one_requirement_to_pip(entry: str) -> None:
    if requirement_problem(entry) is not None:
        return
    args, link = _pip_reads(entry)
    assert args.split() == entry.split(), "pip read another requirement"
    url = direct_reference(entry)
    if url is None:
        assert link is None, (entry, link)
    else:
        assert link is not None and link.url == url, (entry, link)
