"""Issue 42.2: a value never runs as code. A placeholder inside a shell's `-c` script is quoted for
that shell, or (where optlog cannot quote: backquotes, here-documents, `python -c`, …) its value must
be plain text or the spec is refused. Real shells (dash, bash) run every rendered script; a sentinel
file that any hostile value would create must never appear."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optlog.core import codeargs as C
from optlog.core import template as T

SHELLS = [s for s in ("dash", "bash", "zsh", "ksh", "mksh") if shutil.which(s)]
PAYLOADS = ["; touch {S}", "$(touch {S})", "`touch {S}`", "' ; touch {S} ; '", '" ; touch {S} ; "', "\ntouch {S}\n",
            "'$(touch {S})'", '"$(touch {S})"', "\\'; touch {S}; '", "|touch {S}", "&& touch {S}", ">{S}",
            "'\"`touch {S}`\"'", "$'\\x27'; touch {S}", "\\", "'", '"', "${IFS}touch${IFS}{S}", "A=1 touch {S}",
            "*", "~", "#", "!", "-e", "\t", "} ; touch {S} ; {", ")); touch {S}; ((", "\\\n touch {S}"]
# every context optlog quotes, each printed as one NUL-terminated field: expected = what it prints
QUOTED = [("{{ x }}", "{v}"), ("'{{ x }}'", "{v}"), ('"{{ x }}"', "{v}"), ("pre{{ x }}post", "pre{v}post"),
          ("'pre {{ x }} post'", "pre {v} post"), ('"pre {{ x }} post"', "pre {v} post"),
          ('"$HOME"{{ x }}', "{home}{v}"), ("--k={{ x }}", "--k={v}"), ('"a{{ x }}b{{ x }}"', "a{v}b{v}")]
SCRIPT = "printf '%s\\0' " + " ".join(c for c, _ in QUOTED) + "; X={{ x }}; printf '%s\\0' \"$X\""


def hostile(sentinel: Path) -> st.SearchStrategy[str]:
    pay = st.sampled_from(PAYLOADS).map(lambda p: p.replace("{S}", str(sentinel)))
    junk = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)
    return st.one_of(pay, st.tuples(junk, pay, junk).map("".join), junk)


def _run(argv: list[str], cwd: Path) -> bytes:
    return subprocess.run(argv, cwd=cwd, capture_output=True, timeout=20, env={"HOME": "/h", "PATH": os.environ["PATH"]}).stdout


@settings(max_examples=int(os.environ.get("OPTLOG_HYPOTHESIS_EXAMPLES", "40")), deadline=None, database=None,
          derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_values_never_execute_in_argv_or_in_a_shell_script(tmp_path: Path, data: st.DataObject) -> None:
    sentinel = tmp_path / "PWNED"
    v = data.draw(hostile(sentinel))
    sentinel.unlink(missing_ok=True)  # (one tmp_path for all examples: each starts without it)
    fields = [e.replace("{home}", "/h").replace("{v}", v) for _, e in QUOTED] + [v]
    for sh in SHELLS:
        for prefix in ([sh, "-c"], [sh, "-ec"], ["env", "A=1", sh, "-o", "errexit", "-c"]):
            argv = T.render_argv([*prefix, SCRIPT], {"x": v})
            out = _run(argv, tmp_path)
            assert not sentinel.exists(), (sh, v, argv)
            assert out.split(b"\0")[:-1] == [f.encode("utf-8", "surrogateescape") for f in fields], (sh, v, argv)
    # plain argv: the value is one argument, as it is
    assert _run(T.render_argv(["printf", "%s\\0", "{{ x }}"], {"x": v}), tmp_path) == v.encode() + b"\0"
    # where optlog cannot quote, a value that is not plain is refused; a plain one runs as itself
    for sh in SHELLS:
        for script in ("echo `echo {{ x }}`", "cat <<E\n{{ x }}\nE", 'echo "$(echo "{{ x }}")"', "echo $(( {{ x }} ))",
                       "# {{ x }}\necho", "echo \\{{ x }}", "echo ${{ x }}"):
            try:
                argv = T.render_argv([sh, "-c", script], {"x": v})
            except T.TemplateError as e:
                assert not C.plain(v) and "cannot quote" in str(e)
                continue
            assert C.plain(v)
            _run(argv, tmp_path)
            assert not sentinel.exists(), (sh, v, argv)
    for cmd in (["python3", "-c", "print('{{ x }}')"], ["perl", "-e", "print '{{ x }}'"], ["sh", "-c", "sh -c '{{ x }}'"]):
        try:
            argv = T.render_argv(cmd, {"x": v})
        except T.TemplateError:
            assert not C.plain(v)
            continue
        _run(argv, tmp_path)
        assert not sentinel.exists(), (v, argv)


def test_which_arguments_are_code():
    ca = C.code_args
    assert ca(["sh", "-c", "s", "a"]) == {2: (C.POSIX, "sh")}
    assert ca(["/bin/bash", "-o", "pipefail", "-lc", "s", "x"]) == {4: (C.POSIX, "bash")}
    assert ca(["env", "-i", "A=1", "dash", "-ec", "s"]) == {5: (C.POSIX, "dash")}
    assert ca(["timeout", "9", "zsh", "-c", "s"]) == {4: (C.POSIX, "zsh")}
    assert ca(["sh", "script.sh", "-c", "x"]) == {}  # a script file: its arguments are data
    assert ca(["env", "-S", "sh -c x"]) == {2: (C.CODE, "env")}
    assert ca(["python3.12", "-u", "-c", "p", "a"]) == {3: (C.CODE, "python")}
    assert ca(["python3", "bench.py", "-c", "4"]) == {}
    assert ca(["perl", "-ne", "p"]) == {2: (C.CODE, "perl")}
    assert ca(["ssh", "-p", "22", "h", "ls", "x"]) == {4: (C.CODE, "ssh"), 5: (C.CODE, "ssh")}
    assert ca(["fish", "-c", "s"]) == {2: (C.CODE, "fish")}
    assert ca(["llama-server", "-c", "4096"]) == {}


def test_quoting_contexts_and_refusals_name_the_fix():
    assert T.render_argv(["sh", "-c", "echo {{ n }} {{ out }}"], {"n": 4, "out": "/w s/o"}) == \
        ["sh", "-c", "echo 4 '/w s/o'"]
    with pytest.raises(T.TemplateError, match=r"backquotes .*sh -c '… \"\$1\" …' sh \{\{ x \}\}"):
        T.render_argv(["sh", "-c", "echo `{{ x }}`"], {"x": "a;b"})
    with pytest.raises(T.TemplateError, match="code that `python` runs"):
        T.render_argv(["python3", "-c", "print({{ x }})"], {"x": "__import__('os')"})
    # optlog's own values are trusted: a workspace path with a space is no refusal
    assert T.render_argv(["python3", "-c", "open('{{ out }}/r')"], {"out": "/w s"}) == ["python3", "-c", "open('/w s/r')"]
