"""Shell completion scripts generated from the parser: commands, their options, choices.

One source (the argparse parser), three shells; nothing is hand-listed, so a new option
completes as soon as it exists. Values that are paths complete as files.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

__all__ = ["SHELLS", "completion_script"]

SHELLS = ("bash", "zsh", "fish")


@dataclass(frozen=True)
class _Option:
    flags: tuple[str, ...]
    help: str
    choices: tuple[str, ...]
    takes_value: bool


@dataclass(frozen=True)
class _Command:
    name: str
    help: str
    options: tuple[_Option, ...]


def _options(p: argparse.ArgumentParser) -> tuple[_Option, ...]:
    found = []
    for action in p._actions:
        if not action.option_strings:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        found.append(
            _Option(
                tuple(action.option_strings),
                " ".join((action.help or "").split()),
                choices,
                action.nargs != 0,
            )
        )
    return tuple(found)


def _commands(p: argparse.ArgumentParser) -> tuple[tuple[_Option, ...], tuple[_Command, ...]]:
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    commands = tuple(
        _Command(name, " ".join(helps.get(name, "").split()), _options(cp))
        for name, cp in sub.choices.items()
    )
    return _options(p), commands


def completion_script(p: argparse.ArgumentParser, shell: str) -> str:
    """The script for ``shell`` (one of SHELLS), completing ``p.prog``."""
    top, commands = _commands(p)
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](p.prog, top, commands)


def _func(prog: str) -> str:
    return "_" + "".join(c if c.isalnum() else "_" for c in prog)


def _bash(prog: str, top: tuple[_Option, ...], commands: tuple[_Command, ...]) -> str:
    f = _func(prog)
    names = " ".join(c.name for c in commands)
    top_flags = " ".join(f for o in top for f in o.flags)
    cases = []
    for c in commands:
        flags = " ".join(f for o in c.options for f in o.flags)
        cases.append(f"    {c.name}) opts={shlex.quote(flags)} ;;")
    choice_cases = [
        f"    {'|'.join(f'{c.name}:{flag}' for flag in o.flags)}) "
        f'COMPREPLY=($(compgen -W {shlex.quote(" ".join(o.choices))} -- "$cur")); return ;;'
        for c in commands
        for o in c.options
        if o.choices
    ]
    return f"""# {prog} completion for bash: eval "$({prog} completion bash)" (e.g. in ~/.bashrc)
{f}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} cmd="" opts="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in -*) ;; *) cmd=${{COMP_WORDS[i]}}; break ;; esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W {shlex.quote(names + " " + top_flags)} -- "$cur"))
    return
  fi
  case $cmd:$prev in
{chr(10).join(choice_cases)}
  esac
  case $cmd in
{chr(10).join(cases)}
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -F {f} {prog}
"""


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh(prog: str, top: tuple[_Option, ...], commands: tuple[_Command, ...]) -> str:
    f = _func(prog)
    described = " ".join(_zsh_quote(f"{c.name}:{c.help.replace(':', ' -')}") for c in commands)
    cases = []
    for c in commands:
        flags = " ".join(f for o in c.options for f in o.flags)
        choices = "\n".join(
            f"        {flag}) compadd -- {' '.join(map(_zsh_quote, o.choices))}; return ;;"
            for o in c.options
            if o.choices
            for flag in o.flags
        )
        cases.append(
            f"    {c.name})\n      case $words[CURRENT-1] in\n{choices}\n      esac\n"
            f"      opts=({flags}) ;;"
        )
    return f"""#compdef {prog}
# {prog} completion for zsh: eval "$({prog} completion zsh)" (e.g. in ~/.zshrc, after compinit)
{f}() {{
  local -a commands opts
  commands=({described})
  if (( CURRENT == 2 )); then
    _describe -t commands {_zsh_quote(prog + " command")} commands
    return
  fi
  case $words[2] in
{chr(10).join(cases)}
  esac
  if [[ $PREFIX == -* ]]; then
    compadd -- $opts
  else
    _files
  fi
}}
compdef {f} {prog}
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(prog: str, top: tuple[_Option, ...], commands: tuple[_Command, ...]) -> str:
    names = " ".join(c.name for c in commands)
    lines = [
        f"# {prog} completion for fish: {prog} completion fish > "
        f"~/.config/fish/completions/{prog}.fish",
        f"complete -c {prog} -e",
    ]
    for c in commands:
        lines.append(
            f"complete -c {prog} -f -n 'not __fish_seen_subcommand_from {names}' "
            f"-a {c.name} -d {_fish_quote(c.help)}"
        )
    for o in top:
        lines.append(_fish_option(prog, f"not __fish_seen_subcommand_from {names}", o))
    for c in commands:
        for o in c.options:
            lines.append(_fish_option(prog, f"__fish_seen_subcommand_from {c.name}", o))
    return "\n".join(lines) + "\n"


def _fish_option(prog: str, condition: str, o: _Option) -> str:
    parts = [f"complete -c {prog} -n {_fish_quote(condition)}"]
    for flag in o.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if o.choices:
        parts.append(f"-x -a {_fish_quote(' '.join(o.choices))}")
    elif o.takes_value:
        parts.append("-r -F")
    if o.help:
        parts.append(f"-d {_fish_quote(o.help)}")
    return " ".join(parts)
