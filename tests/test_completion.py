"""`trainkit completion bash|zsh|fish`: generated from the parser, so every command and option
completes; bash's is run here as bash runs it."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from trainkit.cli import main, parser


def script(capsys: pytest.CaptureFixture[str], shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete_bash(text: str, line: str) -> list[str]:
    """COMPREPLY for the command line ``line`` (the cursor at its end)."""
    words = line.split(" ")
    program = (
        f"{text}\nCOMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        "_trainkit; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return [w for w in done.stdout.splitlines() if w]


def subcommands() -> dict[str, argparse.ArgumentParser]:
    p = parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_bash_completes_commands_options_and_choices(capsys: pytest.CaptureFixture[str]) -> None:
    text = script(capsys, "bash")
    assert complete_bash(text, "trainkit s") == ["synth", "schema"]
    assert complete_bash(text, "trainkit crds --f") == ["--fetch", "--format"]
    assert complete_bash(text, "trainkit plan --format ") == ["text", "markdown", "json"]
    assert complete_bash(text, "trainkit completion --") == ["--help"]
    assert "completion" in complete_bash(text, "trainkit ")
    assert "-V" in complete_bash(text, "trainkit -")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_command_and_option_is_in_each_script(
    capsys: pytest.CaptureFixture[str], shell: str
) -> None:
    text = script(capsys, shell)
    for name, sub in subcommands().items():
        assert name in text
        for action in sub._actions:
            for flag in action.option_strings:
                if shell == "fish":
                    flag = f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}"
                assert flag in text, (shell, name, flag)


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["completion", "powershell"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'powershell'" in err and "zsh" in err and "fish" in err


def test_dash_capital_v_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    from trainkit import __version__

    with pytest.raises(SystemExit) as e:
        main(["-V"])
    assert e.value.code == 0 and capsys.readouterr().out == f"trainkit {__version__}\n"
