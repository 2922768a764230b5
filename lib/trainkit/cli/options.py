"""What the commands' parsers share: path options said from where the command started, the
limits of running definitions, CRD and report options, and reading them back."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..load import LoadOptions

__all__ = [
    "GivenPath",
    "add_common",
    "add_crds_option",
    "add_definitions_cache",
    "add_loading",
    "add_report_format",
    "add_require_crds",
    "load_options",
    "positive",
    "require_baseline",
    "require_sandbox",
]


class GivenPath(argparse.Action):
    """Stores a path option and notes that it was given: given paths are relative to the
    directory the command started in, defaults to the repository root."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: Any, option_string: str | None = None,
    ) -> None:  # fmt: skip
        setattr(namespace, self.dest, values)
        namespace.given_paths = {*getattr(namespace, "given_paths", ()), self.dest}


def positive(kind: type[int] | type[float]) -> Any:
    """An argparse type: a number above zero (anything else is a usage error, exit 2)."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not above 0")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def add_loading(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "running definitions",
        "Definitions are code from pull requests: each team directory runs in its own "
        "process, read-only and without network where the OS allows it, within these limits.",
    )
    g.add_argument(
        "--load-timeout", type=positive(float), default=60.0, metavar="SECONDS",
        help="seconds one definition file may take (default: 60)",
    )  # fmt: skip
    g.add_argument(
        "--load-memory", type=positive(int), default=2048, metavar="MIB",
        help="memory one definition process may use, in MiB (default: 2048)",
    )  # fmt: skip
    g.add_argument(
        "--isolation", choices=["team", "file"], default="team",
        help="one process per team directory (default) or per definition file",
    )  # fmt: skip
    g.add_argument(
        "--require-sandbox", action="store_true",
        help="fail, running no definition, where the OS cannot confine definitions (no user "
        "namespaces); the default when the environment variable CI is set. Without it such a "
        "machine runs them unconfined with a note",
    )  # fmt: skip


def add_common(p: argparse.ArgumentParser) -> None:
    add_loading(p)
    p.add_argument(
        "--jobs", default="jobs", action=GivenPath, help="directory of definitions (default: jobs)"
    )
    p.add_argument(
        "--out",
        default="generated",
        action=GivenPath,
        help="output directory (default: generated)",
    )
    p.add_argument(
        "--against",
        metavar="REV",
        help="git revision holding what is deployed, to refuse in-place changes of "
        "TrainJobs and other immutable fields (default: origin/<ArgoCD revision>, else "
        "<revision>, else the output directory on disk; 'disk' forces the latter)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the caches (always the case when the environment "
        "variable CI is set): run every definition, write every object through cdk8s",
    )
    p.add_argument(
        "--require-baseline",
        action="store_true",
        help="fail unless origin/<ArgoCD revision> (or --against) is there to compare with "
        "(the default when the environment variable CI is set)",
    )


def add_definitions_cache(
    p: argparse.ArgumentParser, *, which: str = "every definition", where: str = ""
) -> None:
    """``--no-cache`` of a command that loads definitions through synth's definitions cache
    but keeps no run record of its own (``plan``, ``explain``, ``validate``)."""
    p.add_argument(
        "--no-cache",
        action="store_true",
        help=f"{where}run {which} instead of reusing the payload of an unchanged one (the "
        "definitions cache synth and check keep; never used when the environment variable CI "
        "is set)",
    )


def add_crds_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--crds",
        metavar="PATH",
        action=GivenPath,
        help="CustomResourceDefinitions: a directory of YAML files, or one file, holding CRD "
        "documents or a List of them (default: $TRAINKIT_CRDS, else the pinned upstream ones "
        "`trainkit crds --fetch` put outside the work tree); dump your cluster's with "
        "`kubectl get crd -o yaml > crds.yaml`",
    )


def add_require_crds(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-crds",
        action="store_true",
        help="fail when no CRDs are given (CI): without them the CRD schemas and CEL rules "
        "are not checked, which is otherwise only a warning",
    )


def add_report_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=["text", "github", "json"],
        default="text",
        help="how problems are reported: text for people (default), github for GitHub "
        "Actions annotations at file and line, json (a list of {file, line, obj, field, "
        "message} on stdout)",
    )
    p.set_defaults(reports=True)


def load_options(args: argparse.Namespace) -> LoadOptions:
    from ..load import LoadOptions

    return LoadOptions(
        timeout=args.load_timeout,
        memory=args.load_memory << 20,
        isolation=args.isolation,
        require_sandbox=require_sandbox(args),
    )


def require_sandbox(args: argparse.Namespace) -> bool:
    # The gate (CI) never runs a definition the OS cannot confine; a laptop may, with a note.
    return bool(args.require_sandbox or os.environ.get("CI"))


def require_baseline(args: argparse.Namespace) -> bool:
    # CI must compare with what Argo CD deploys; a developer's clone may lack it.
    return bool(args.require_baseline or os.environ.get("CI"))
