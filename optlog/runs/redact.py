"""Secrets never leave optlog in clear: one redaction, applied where data goes to storage or output.

A run spec may carry credentials (`env: {HF_TOKEN: …}`, `--api-key …` in a command, a password in a
URL, an `Authorization` header) that the server and bench must receive. Everything optlog *keeps*
or *shows* of them — the launch record, run rows (labels, environment, raw, errors), the launch log,
the terminal's narration, files it commits — goes through `Redactor.redact` first; the processes get
the real values because the launcher drives them from the unredacted document it holds in memory
(a detached driver receives it on a pipe, never through a file).

What counts as a secret:
  by name   a mapping key, environment variable, `--flag` or `NAME=VALUE` argument one of whose words
            (split at `_`, `-`, `.`, spaces and camelCase) ends with token, key, secret, password,
            passwd, auth, authorization, credential(s) or cookie: `HF_TOKEN`, `api_key`, `--api-key`,
            `OPENAI_API_KEY`, `ssl_keyfile_password`, `oauth`; not `max_tokens`, `tokenizer`,
            `author`, `keyboard`. Only text values are redacted by name (a number such as
            `num_key_heads: 8` is configuration, not a credential).
            An environment variable is secret when its name contains CRED, AUTH, PASS, TOKEN, KEY,
            SECRET, PRIVATE or COOKIE anywhere (`MY_CREDS`, `DB_PASSWD`); a spec names more with
            `secret: [NAME, …]` (params, variables, flags: matched whole, any case).
  by shape  user-info in a URL (`https://user:pw@host`, `https://TOKEN@host`), `Bearer …` / `Basic …`
            values, `Authorization: …` / `X-Api-Key: …` header text, and the shapes of well-known
            credentials wherever they appear: OpenAI `sk-…`, Hugging Face `hf_…`, GitHub `ghp_…` /
            `github_pat_…`, AWS `AKIA…`, Slack `xox?-…`, JSON Web Tokens `eyJ….eyJ….…`.
  by value  every secret found by name or shape in the launch's document is also replaced wherever
            its exact text appears later (a stderr tail, an error message, a server's echo), when it
            is at least `MIN_VALUE_LEN` characters long.
  from the environment  a value `{{ env.NAME }}` renders loses its name on the way (it is only an
            argument, a label, a variable of another name), so the launch's redactor is also told
            the environment's credentials (`env_secrets`): every variable the spec reads whose name
            is a secret's, and every other secret-named variable of at least `ORPHAN_MIN_LEN`
            characters (a bench may print one it inherited); `true`, `0` and the like never count.

The replacement is `REDACTED` (`<redacted>`). Keys of optlog's own structure that happen to end in
a secret word (`key_map`, `server_key`, the launch `token` used to find its processes) are kept
structurally: their text still goes through the value and shape rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from optlog.core.template import env_names

REDACTED = "<redacted>"
SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "pass", "auth", "authorization", "credential",
                "credentials", "cred", "creds", "cookie", "private")
# an environment variable whose name contains one of these anywhere (case-insensitive) is secret
ENV_WORDS = ("cred", "auth", "pass", "token", "key", "secret", "private", "cookie")
MIN_VALUE_LEN = 4
ORPHAN_MIN_LEN = 8  # a secret-named variable no spec reads: shorter values are too likely to be settings
_TRIVIAL = frozenset({"true", "false", "yes", "no", "none", "null", "on", "off", "auto", "info", "warn", "debug"})
# optlog's own field names that end in a secret word but hold no credential
STRUCTURAL = frozenset({"key_map", "server_key", "token", "sort_key", "group_key"})

_WORD_SPLIT = re.compile(r"[_\-.\s/:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_URL_USERINFO = re.compile(r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<info>[^/\s@?#]+)@")
_BEARER = re.compile(r"(?i)\b(?P<pre>(?:bearer|basic)\s+)(?P<val>[A-Za-z0-9._~+/=\-]{4,})")
_HEADER = re.compile(r"(?i)\b(?P<pre>(?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie)(?P<sep>\s*:\s*)"
                     r"(?P<val>[^\r\n\"']+)")
_VAL = r"(?P<val>\"[^\"]*\"|'[^']*'|[^\s\"',;&|]+)"
_ASSIGN = re.compile(r"(?P<name>(?<![\w-])-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>=|:[ \t]*)" + _VAL)
_FLAG = re.compile(r"(?P<name>(?<![\w-])--?[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>[ \t]+)" + _VAL)
_SCHEMES = ("bearer", "basic", "token")
# credentials known by their shape, wherever they appear (a value under an innocent name, a stderr line)
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:"
    r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{6,}"   # OpenAI, Anthropic, Stripe-like
    r"|hf_[A-Za-z0-9]{6,}"                                 # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,}"  # GitHub
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"                          # AWS access key id
    r"|xox[abposr]-[A-Za-z0-9\-]{6,}"                      # Slack
    r"|eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"  # a JSON Web Token
    r")")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def secret_name(name: str) -> bool:
    """A key, variable or flag name that holds a credential (see the module doc)."""
    n = str(name).strip().lstrip("-")
    if not n:
        return False
    words = _WORD_SPLIT.split(_CAMEL.sub("_", n).lower())
    for i, w in enumerate(words):
        # "…_per_token" is a unit (kv_bytes_per_token, a model fact the diagnosis reads), not a credential
        if w and w.endswith(SECRET_WORDS) and not (i > 0 and words[i - 1] == "per"):
            return True
    return False


def secret_env_name(name: str) -> bool:
    """An environment variable that may hold a credential: stricter than `secret_name`, any
    occurrence of a secret word counts (`HF_TOKEN`, `NCCL_IB_PKEY`, `SGLANG_MAX_TOKENS` too: a lost
    setting is cheaper than a leaked credential)."""
    low = str(name).lower()
    return any(w in low for w in ENV_WORDS) or secret_name(name)


def secret_env(name: str, value: Any) -> bool:
    """An environment entry to keep out of files and command lines: a secret name, or a value that
    carries a URL's credentials (`OPTLOG_DB_URL=postgresql://user:pw@host/db`)."""
    return secret_env_name(name) or redact_url(str(value)) != str(value)


def _url_sub(m: re.Match[str]) -> str:
    info = m.group("info")
    if info == REDACTED or info.endswith(":" + REDACTED):
        return m.group(0)
    user, colon, _pw = info.partition(":")
    return m.group("pre") + (f"{user}:{REDACTED}" if colon else REDACTED) + "@"


def redact_url(s: str) -> str:
    """User-info of every URL in `s`: the password (or a lone token before `@`) replaced."""
    return _URL_USERINFO.sub(_url_sub, s)


def _shape(s: str) -> str:
    """Shape rules on one text: URL user-info, bearer values, header values, credential shapes."""
    s = _TOKEN_SHAPES.sub(REDACTED, s)
    s = _URL_USERINFO.sub(_url_sub, s)
    s = _HEADER.sub(lambda m: m.group("pre") + m.group("sep") + REDACTED, s)
    s = _BEARER.sub(lambda m: m.group("pre") + REDACTED, s)
    return s


def _assignments(s: str) -> str:
    """`NAME=VALUE`, `--flag=VALUE`, `--flag VALUE`, `name: VALUE` inside a free text, secret NAME."""
    def sub(m: re.Match[str]) -> str:
        name, sep, val = m.group("name"), m.group("sep"), m.group("val")
        if not secret_name(name) or val.startswith("-") or REDACTED in val or val.lower() in _SCHEMES:
            return m.group(0)
        return name + sep + REDACTED
    return _FLAG.sub(sub, _ASSIGN.sub(sub, s))


def redact_argv(argv: Iterable[Any], found: set[str] | None = None) -> list[str]:
    """A command line with the values of secret flags and `NAME=VALUE` arguments replaced;
    `found` collects the secret values seen."""
    out: list[str] = []
    skip_next = False
    for a in argv:
        a = str(a)
        if skip_next:
            skip_next = False
            if not a.startswith("-"):
                _note(found, a)
                out.append(REDACTED)
                continue
        if a.startswith("-") and len(a) > 1 and not _NUMBER.match(a):
            name, eq, val = a.partition("=")
            if secret_name(name):
                if eq:
                    _note(found, val)
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(a)
                    skip_next = True
                continue
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", a):
            name, _, val = a.partition("=")
            if secret_name(name) or secret_env_name(name):
                _note(found, val)
                out.append(f"{name}={REDACTED}")
                continue
        out.append(_shape(a))
    return out


def _note(found: set[str] | None, value: Any) -> None:
    if found is not None and isinstance(value, str):
        v = value.strip().strip("'\"")
        if len(v) >= MIN_VALUE_LEN and v != REDACTED:
            found.add(v)


def _looks_like_argv(v: list[Any]) -> bool:
    return bool(v) and all(isinstance(x, (str, int, float)) for x in v) and any(
        isinstance(x, str) and x.startswith("-") for x in v)


def _env_key(ks: str, parent: str | None) -> bool:
    """A key that names an environment variable: under `env`/`environment`, or a flattened
    `bench.env.NAME` / `server.env.NAME`."""
    return parent in ("env", "environment") or ".env." in ks or ks.startswith("env.")


def secret_key(ks: str, parent: str | None = None, extra: frozenset[str] = frozenset()) -> bool:
    """A mapping key whose text value is a credential: by name (a variable's name by the broader
    environment rule), or named by the spec's `secret:` list."""
    if ks in STRUCTURAL:
        return False
    last = ks.rsplit(".", 1)[-1]
    if extra and (ks.lower() in extra or last.lower() in extra or last.lstrip("-").lower() in extra):
        return True
    return secret_name(ks) or (_env_key(ks, parent) and secret_env_name(last))


def _spec_names(obj: Any) -> frozenset[str]:
    """The names a spec's `secret:` list adds (a launch document carries its spec's)."""
    if isinstance(obj, dict):
        lst = obj.get("secret")
        if not isinstance(lst, list) and isinstance(obj.get("spec"), dict):
            lst = obj["spec"].get("secret")
        if isinstance(lst, list):
            return frozenset(str(x).lower().lstrip("-") for x in lst if isinstance(x, str))
    return frozenset()


def collect(obj: Any, found: set[str] | None = None, key: str | None = None,
            extra: frozenset[str] = frozenset()) -> set[str]:
    """Every secret value in a JSON-like document, by name and by shape."""
    found = set() if found is None else found
    extra = extra | _spec_names(obj)
    if isinstance(obj, dict):
        for k, v in obj.items():
            ks = str(k)
            if isinstance(v, (str, int, float)) and not isinstance(v, bool) and secret_key(ks, key, extra) \
                    and (isinstance(v, str) or ks.lower() in extra or ks.rsplit(".", 1)[-1].lower() in extra):
                _note(found, str(v))
            collect(v, found, ks, extra)
    elif isinstance(obj, (list, tuple)):
        if _looks_like_argv(list(obj)):
            redact_argv(obj, found)
        if extra:
            _named_flags(list(obj), extra, found)
        for v in obj:
            collect(v, found, key, extra)
    elif isinstance(obj, str):
        for m in _TOKEN_SHAPES.finditer(obj):
            _note(found, m.group(0))
        for m in _URL_USERINFO.finditer(obj):
            info = m.group("info")
            _note(found, info.split(":", 1)[1] if ":" in info else info)
        for m in _BEARER.finditer(obj):
            _note(found, m.group("val"))
        for m in _HEADER.finditer(obj):
            _note(found, m.group("val").split()[-1] if m.group("val").split() else "")
        for rx in (_ASSIGN, _FLAG):
            for m in rx.finditer(obj):
                if secret_name(m.group("name")) and m.group("val").lower() not in _SCHEMES \
                        and not m.group("val").startswith("-"):
                    _note(found, m.group("val"))
    return found


def _named_flags(argv: list[Any], extra: frozenset[str], found: set[str]) -> None:
    """`--NAME VALUE` / `--NAME=VALUE` where the spec's `secret:` names NAME."""
    for i, a in enumerate(argv):
        a = str(a)
        if a.startswith("-"):
            name, eq, val = a.partition("=")
            if name.lstrip("-").lower() in extra:
                if eq:
                    _note(found, val)
                elif i + 1 < len(argv):
                    _note(found, str(argv[i + 1]))


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def env_secrets(environ: Mapping[str, str], docs: Iterable[Any] = ()) -> set[str]:
    """The credentials of an environment, as values to replace wherever they appear: the variables
    the documents read (`{{ env.NAME }}`) whose name is a secret's (whole value) or whose value holds
    one (its URL password, its token shape), and every other secret-named variable of at least
    `ORPHAN_MIN_LEN` characters. optlog's own `OPTLOG_*` variables count only where a spec reads them
    (a database URL's password is redacted by its shape wherever it shows)."""
    used: set[str] = set()
    for d in docs:
        for s in _strings(d):
            if "{{" in s:
                used |= env_names(s)
    out: set[str] = set()
    for k, v in environ.items():
        v = str(v)
        if v.strip().lower() in _TRIVIAL or _NUMBER.match(v.strip()):
            continue
        own = k.startswith("OPTLOG_")
        if secret_env_name(k) and not own and (k in used or len(v) >= ORPHAN_MIN_LEN):
            _note(out, v)
        if k in used:
            collect(v, out)
    return out


class Redactor:
    """Redaction by name and shape, plus the exact secret values of one document (`known`)."""

    def __init__(self, known: Iterable[str] = (), extra: frozenset[str] = frozenset()) -> None:
        self.known = sorted({k for k in known if k and len(k) >= MIN_VALUE_LEN and k != REDACTED},
                            key=len, reverse=True)
        self.extra = extra  # names a spec's `secret:` added

    @classmethod
    def of(cls, *docs: Any, environ: Mapping[str, str] | None = None) -> "Redactor":
        """The secrets of `docs` (a launch's spec, sets, rendered points), and of `environ` (where
        `{{ env.NAME }}` was rendered: `env_secrets`)."""
        found: set[str] = set()
        extra: frozenset[str] = frozenset()
        for d in docs:
            extra |= _spec_names(d)
        for d in docs:
            collect(d, found, extra=extra)
        if environ is not None:
            found |= env_secrets(environ, docs)
        return cls(found, extra)

    def text(self, s: str) -> str:
        for k in self.known:
            if k in s:
                s = s.replace(k, REDACTED)
        return _assignments(_shape(s))

    def redact(self, obj: Any, key: str | None = None) -> Any:
        """A redacted copy of a JSON-like object (dicts, lists, text; other values as they are)."""
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                ks = str(k)
                if isinstance(v, str) and secret_key(ks, key, self.extra):
                    out[k] = REDACTED if v else v
                else:
                    out[k] = self.redact(v, ks)
            return out
        if isinstance(obj, (list, tuple)):
            items = redact_argv(obj) if _looks_like_argv(list(obj)) else list(obj)
            return [self.redact(v, key) for v in items]
        if isinstance(obj, str):
            return self.text(obj)
        return obj


_PLAIN = Redactor()


def redact(obj: Any, known: Iterable[str] = ()) -> Any:
    """Redact by name and shape (and the exact `known` values): the one entry point for storage and
    output."""
    return (Redactor(known) if known else _PLAIN).redact(obj)
