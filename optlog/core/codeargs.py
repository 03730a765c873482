"""Placeholders inside arguments that a program runs as code: a shell's `-c` script, `python -c`, …

`core.template` splits a command into arguments before any value is put in, so a value never
becomes two arguments. That is not enough when the argument is itself a program: in
`sh -c 'echo {{ x }}'` the shell parses the script after optlog rendered it, and a value
`a; touch F`, `$(touch F)` or `` `touch F` `` would run. So an argument that a program interprets is
found first (`code_args`), and each placeholder in it is rendered for that language:

- **POSIX shells** (sh, bash, dash, zsh, ksh, mksh, ash, yash, busybox sh; found anywhere in the
  command, so `env A=1 sh -c`, `timeout 9 bash -lc`, `docker exec c sh -c` and `srun bash -c` count),
  the script after `-c` (alone or in a cluster: `-ec`, `-lc`; `-o OPT` skipped): a placeholder
  outside quotes becomes one single-quoted word (`'a; touch F'`); inside `'…'` its quotes are
  escaped (`'\\''`); inside `"…"` the double quotes are closed around a single-quoted value. The
  value reaches the script as literal text, whatever it holds.
- **Everywhere else that is code**, where optlog does not quote: a placeholder inside backquotes,
  `$( … )`, `$(( … ))`, `${ … }`, `$'…'`, a here-document or a comment of such a script, one right
  after `\\` or `$`, the `-c` script of another shell (fish, csh, tcsh, pwsh, nu, …), the program of
  an interpreter (`python -c`, `perl -e`, `ruby -e`, `node -e`/`-p`, `php -r`, `Rscript -e`,
  `lua -e`), `env -S STRING`, and the command words of `ssh HOST …`, `su -c`, `runuser -c`,
  `flock … -c`, `script -c` and `watch …`: the value must be plain text (`PLAIN`: letters, digits,
  `_ . , : / + % @ -`), else the placeholder is refused, with the fix: pass the value as an argument
  (`sh -c '… "$1" …' sh {{ x }}`, `python -c '…sys.argv[1]…' {{ x }}`) or through `env:`.
  optlog's own values (`{{ out }}`, ids, `{{ env.NAME }}` of the machine it runs on) are trusted:
  quoted like any other in a POSIX script, never refused.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

POSIX = "posix"  # a POSIX shell script: placeholders are quoted for it
CODE = "code"    # any other program text: placeholder values must be plain

POSIX_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "lksh", "pdksh", "ash", "yash",
                          "posh", "rbash", "bosh", "oksh", "loksh"})
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "pwsh", "powershell", "xonsh", "elvish", "rc", "es",
                          "ion", "oil", "osh", "ysh", "murex"})
# interpreter -> (its short option letters that take the program as their argument, long spellings)
INTERPRETERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("c", ()), "pypy": ("c", ()), "perl": ("eE", ()), "ruby": ("e", ()),
    "node": ("ep", ("--eval", "--print")), "nodejs": ("ep", ("--eval", "--print")),
    "bun": ("ep", ("--eval", "--print")), "deno": ("", ("eval",)), "php": ("r", ()),
    "rscript": ("e", ()), "lua": ("e", ()), "luajit": ("e", ()), "tclsh": ("", ()),
}
_VERSIONED = re.compile(r"^(python|pypy|perl|lua|ruby|php|node)[0-9.]*[a-z]?$")
# programs that run their -c argument (or their command words) through a shell
_C_VIA_SHELL = frozenset({"su", "runuser", "flock", "script"})
_SSH_ARG_LETTERS = "BbcDEeFIiJLlmOoPpQRSWw"

PLAIN = re.compile(r"[A-Za-z0-9_.,:/+%@-]*")
PLAIN_TEXT = "letters, digits and _ . , : / + % @ -"
# a word the shell takes as itself, unquoted (shlex's safe set without `=`, so `A=1` is no assignment)
_SH_SAFE = re.compile(r"[A-Za-z0-9_@%+:,./-]+")


def program(word: str) -> str:
    """The program a command word names: its basename, lower case, version suffix dropped."""
    b = word.rsplit("/", 1)[-1].lower()
    m = _VERSIONED.match(b)
    return m.group(1) if m else b


def code_args(argv: list[str]) -> dict[int, tuple[str, str]]:
    """Which arguments of a (rendered) command line a program runs as code: index -> (POSIX or
    CODE, the program). The first shell or interpreter in the line decides; the words before it
    are wrappers (`env`, `timeout 9`, `sudo -u x`, `docker exec c`)."""
    return {i: (kind, prog) for i, (kind, prog) in _code_args(argv).items()}


def _code_args(argv: list[str]) -> dict[int, tuple[str, str]]:
    for i, a in enumerate(argv):
        p = program(a)
        found: dict[int, str] | None = None
        if p == "env":
            found = _env_split(argv, i) or None
        elif p in POSIX_SHELLS or p in OTHER_SHELLS:
            found = _shell(argv, i, POSIX if p in POSIX_SHELLS else CODE)
        elif p in INTERPRETERS:
            found = _interpreter(argv, i, *INTERPRETERS[p])
        elif p == "ssh":
            found = _ssh(argv, i)
        elif p == "eval":  # POSIX `eval WORDS`: the words joined, parsed again
            found = {j: CODE for j in range(i + 1, len(argv))}
        elif p == "trap" and i + 1 < len(argv):
            found = {i + 1: CODE}
        elif p == "watch":
            found = {j: CODE for j in range(i + 1, len(argv)) if not argv[j].startswith("-")}
        elif p in _C_VIA_SHELL:
            found = {j + 1: CODE for j in range(i + 1, len(argv) - 1) if argv[j] in ("-c", "--command")} or None
        if found is not None:
            return {j: (kind, p) for j, kind in found.items()}
    return {}


def _env_split(argv: list[str], i: int) -> dict[int, str]:
    """`env -S STRING` / `--split-string=STRING`: env splits STRING itself (quotes, `${VAR}`)."""
    out: dict[int, str] = {}
    for j in range(i + 1, len(argv)):
        a = argv[j]
        if a in ("-S", "--split-string") and j + 1 < len(argv):
            out[j + 1] = CODE
        elif a.startswith("--split-string=") or (a.startswith("-S") and len(a) > 2) or \
                (a.startswith("-") and not a.startswith("--") and "S" in a[1:] and a[1:].isalpha()):
            out[j] = CODE
            if a.endswith("S") and j + 1 < len(argv):
                out[j + 1] = CODE
        elif not a.startswith("-") and "=" not in a:
            break
    return out


def _shell(argv: list[str], i: int, kind: str) -> dict[int, str]:
    """A shell's options, then its script: with `-c` (any short cluster holding `c`) the first
    argument after the options is code. Another shell's every non-option argument counts as code
    (optlog does not know its quoting)."""
    if kind == CODE:
        return {j: CODE for j in range(i + 1, len(argv)) if not argv[j].startswith("-")}
    is_c = False
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--":
            j += 1
            break
        if a in ("--rcfile", "--init-file"):
            j += 2
            continue
        if a.startswith("--"):
            j += 1
            continue
        if len(a) > 1 and a[0] in "-+" and a[1:].isalpha():
            if a[0] == "-" and "c" in a[1:]:
                is_c = True
            if a[-1] in "oO":  # -o pipefail, +O extglob
                j += 1
            j += 1
            continue
        break
    return {j: POSIX} if is_c and j < len(argv) else {}


def _interpreter(argv: list[str], i: int, letters: str, longs: tuple[str, ...]) -> dict[int, str]:
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a in longs:
            return {j + 1: CODE} if j + 1 < len(argv) else {}
        if any(a.startswith(f"{lo}=") for lo in longs):
            return {j: CODE}
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            body = a[1:]
            for k, ch in enumerate(body):
                if ch in letters:
                    if k == len(body) - 1:
                        return {j + 1: CODE} if j + 1 < len(argv) else {}
                    return {j: CODE}  # the program written right after the letter: -cprint(1)
                if not ch.isalpha():
                    break
            if a in ("-m",):  # python -m MODULE: no program text
                return {}
            if a in ("-X", "-W", "-I", "-M") and not longs:
                j += 1
            j += 1
            continue
        if a.startswith("--"):
            j += 1
            continue
        return {}  # a script file: what follows are its arguments
    return {}


def _ssh(argv: list[str], i: int) -> dict[int, str]:
    """`ssh [options] DEST WORDS…`: the remote shell parses the words joined by spaces."""
    j = i + 1
    while j < len(argv):
        a = argv[j]
        if a == "--":
            j += 1
            break
        if a.startswith("-") and len(a) > 1:
            body = a[1:]
            for k, ch in enumerate(body):
                if ch in _SSH_ARG_LETTERS:
                    if k == len(body) - 1:
                        j += 1
                    break
            j += 1
            continue
        break
    return {k: CODE for k in range(j + 1, len(argv))}


# ----------------------------------------------------------------------------- POSIX scripts


@dataclass(frozen=True)
class Slot:
    """Where a placeholder sits in a POSIX script: `quote` is "" (unquoted), "'" or '"' when optlog
    can quote its value there; None where it cannot (the reason in `where`)."""

    quote: str | None
    where: str = ""


MARK = "\x00"  # a placeholder while a script is read (NUL: no argument can hold one)
_MARK = MARK


_OPENERS = ("$((", "$(", "${")  # longest first: "$((" is arithmetic, not a command substitution


def _opener(s: str, i: int) -> str | None:
    """The expansion that opens at `s[i]` ($(( )), $( ), ${ }), if one does: the same inside double
    quotes and outside them."""
    return next((o for o in _OPENERS if s.startswith(o, i)), None)


def slots(s: str) -> list[Slot]:
    """The quoting context of each placeholder of a POSIX shell script, in order; the caller has
    written each placeholder as `MARK`. Only three contexts are quoted (outside quotes, inside '…',
    inside "…", at the script's top level); every other one is reported as such, and its value must
    be plain."""
    out: list[Slot] = []
    stack: list[str] = []  # "'", '"', "$'", "`", "$(", "$((", "${"
    heredocs: list[tuple[str, bool]] = []  # pending: (delimiter, strip tabs)
    in_heredoc: tuple[str, bool] | None = None
    comment = False
    word_start = True
    n = len(s)
    i = 0
    line_start = 0
    # the words of the current simple command at the top level (quotes removed), and which slots
    # each holds: a word that a program of the script runs as code (`eval`, a nested `sh -c`)
    # makes its placeholders unquotable
    word: list[str] = []
    word_slots: list[int] = []
    words: list[tuple[str, list[int]]] = []

    def end_word() -> None:
        if word or word_slots:
            words.append(("".join(word), list(word_slots)))
            word.clear()
            word_slots.clear()

    def end_cmd() -> None:
        end_word()
        for j, (_kind, prog) in code_args([w for w, _ in words]).items():
            for k in words[j][1]:
                if out[k].quote is not None:
                    out[k] = Slot(None, f"the code that `{prog}` runs inside the script")
        words.clear()

    while i < n:
        c = s[i]
        if len(stack) <= 1 and c != _MARK and not comment and in_heredoc is None and \
                (stack or c not in " \t\n;&|()<>'\"\\`$#") and not (stack and c == stack[0]):
            word.append(c)
        if c == _MARK:
            word.append(c)
            word_slots.append(len(out))
            prev = s[i - 1] if i > 0 else ""
            if in_heredoc is not None:
                out.append(Slot(None, "a here-document"))
            elif comment:
                out.append(Slot(None, "a comment"))
            elif _escaped(s, i):
                out.append(Slot(None, "right after a backslash"))
            elif prev == "$":
                out.append(Slot(None, "right after `$`"))
            elif not stack or stack == ["'"] or stack == ['"']:
                out.append(Slot(stack[0] if stack else ""))
            elif stack[-1] in ("'", '"'):
                out.append(Slot(None, f"quotes inside {_WHERE.get(stack[-2], 'a nested construct')}"))
            else:
                out.append(Slot(None, _WHERE.get(stack[-1], "a nested construct")))
            i += 1
            word_start = False
            continue
        if in_heredoc is not None:
            if c == "\n":
                line = s[line_start:i]
                if (line.lstrip("\t") if in_heredoc[1] else line) == in_heredoc[0]:
                    in_heredoc = heredocs.pop(0) if heredocs else None
                line_start = i + 1
            i += 1
            continue
        if comment:
            if c == "\n":
                comment = False
                word_start = True
                line_start = i + 1
                if heredocs and not stack:
                    in_heredoc = heredocs.pop(0)
            i += 1
            continue
        top = stack[-1] if stack else ""
        if top == "'":
            if c == "'":
                stack.pop()
            i += 1
            continue
        if top == "$'":
            if c == "\\":
                i += 2
                continue
            if c == "'":
                stack.pop()
            i += 1
            continue
        if c == "\\":
            if not stack and i + 1 < n:
                word.append(s[i + 1])
            i += 2
            word_start = False
            continue
        if top == '"':
            if c == '"':
                stack.pop()
            elif (o := _opener(s, i)) is not None:
                stack.append(o)
                word_start = word_start or o == "$("
                i += len(o)
                continue
            elif c == "`":
                stack.append("`")
            i += 1
            continue
        # unquoted: the top level, or inside $( ), $(( )), ${ }, ` `
        if top == "`" and c == "`":
            stack.pop()
            i += 1
            continue
        if top == "$((" and s.startswith("))", i):
            stack.pop()
            i += 2
            continue
        if top == "${" and c == "}":
            stack.pop()
            i += 1
            continue
        if top == "$(" and c == ")":
            stack.pop()
            i += 1
            word_start = False
            continue
        if c == "#" and word_start and top in ("", "$("):
            comment = True
            i += 1
            continue
        if s.startswith("$'", i):
            stack.append("$'")
            i += 2
            continue
        if c in ("'", '"', "`"):
            stack.append(c)
        elif (o := _opener(s, i)) is not None:
            stack.append(o)
            word_start = word_start or o == "$("
            i += len(o)
            continue
        elif s.startswith("<<", i) and not s.startswith("<<<", i):
            strip = s.startswith("<<-", i)
            j = i + (3 if strip else 2)
            while j < n and s[j] in " \t":
                j += 1
            k = j
            while k < n and s[k] not in " \t\n;&|<>()":
                if s[k] == _MARK:
                    out.append(Slot(None, "a here-document's delimiter"))
                k += 1
            heredocs.append((re.sub(r"[\"'\\]", "", s[j:k]), strip))
            i = k
            word_start = False
            continue
        elif c == "\n":
            line_start = i + 1
            if heredocs and not stack:
                in_heredoc = heredocs.pop(0)
        if not stack:
            if c in " \t<>":
                end_word()
            elif c in "\n;&|()":
                end_cmd()
        word_start = c in " \t\n;&|()<>"
        i += 1
    end_cmd()
    return out


_WHERE = {"`": "backquotes", "$(": "a `$( … )` substitution", "$((": "a `$(( … ))` arithmetic expansion",
          "${": "a `${ … }` parameter expansion", "$'": "a `$'…'` string", "'": "quotes", '"': "quotes"}


def _escaped(s: str, i: int) -> bool:
    k, n = i - 1, 0
    while k >= 0 and s[k] == "\\":
        n += 1
        k -= 1
    return n % 2 == 1


def sh_word(v: str) -> str:
    """`v` as one literal word of a POSIX shell (single quotes; a plain word stays as it is)."""
    if _SH_SAFE.fullmatch(v):
        return v
    return "'" + v.replace("'", "'\"'\"'") + "'"


def quote_in(v: str, q: str) -> str:
    """`v` written into a POSIX script at a slot whose quote is `q`, as literal text."""
    if q == "'":
        return v.replace("'", "'\\''")
    if q == '"':
        return v if not re.search(r'["$`\\]', v) else '"' + sh_word(v) + '"'
    return sh_word(v)


def plain(v: str) -> bool:
    return PLAIN.fullmatch(v) is not None
