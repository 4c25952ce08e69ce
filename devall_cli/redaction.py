"""The one rule for secrets, and the one object that masks them (DESIGN.md "Secrets").

A *secret* is:
- a value the workflow declares under a secret-looking name: `api_key`; a header, `env` entry,
  `vars` entry, `--var` or `${NAME}` placeholder whose name looks secret (`is_secret_name`);
- a credential inside a URL: the password of `user:password@`, the value of a query parameter
  whose name looks secret (`?apiToken=`, `?X-Amz-Signature=`, `?sig=`);
- a form derived from one of these: the bare token of `Bearer <token>`, the `Basic` credential
  a URL's `user:password@` turns into, the percent-decoded form of a URL credential.

Declared values shorter than MIN_SECRET_LENGTH are not masked in free text: masking `1` or
`debug` wherever it occurs would corrupt ordinary output. Credentials inside URLs are masked in
any text whatever their length, since the URL around them says what they are.

The loader builds one Redactor per workflow (`Workflow.redactor`); every sink, error line and
file devall writes goes through it. Masking happens before text is cut to a preview length.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"
MIN_SECRET_LENGTH = 6

# Words that make a name secret when they appear as a word of it (split at `_`, `-`, `.`,
# spaces, digits and camelCase humps): `OPENAI_API_KEY`, `apiToken`, `X-Amz-Signature`.
_SECRET_WORDS = frozenset(
    {
        "key", "apikey", "token", "secret", "secrets", "password", "passwords", "passwd",
        "pwd", "passphrase", "keys", "auth", "authorization", "credential", "credentials", "cookie",
        "signature", "sig", "jwt",
    }
)  # fmt: skip
# Endings that make a single lowercase word secret: `accesstoken`, `clientsecret`, `dbpassword`.
_SECRET_SUFFIXES = ("apikey", "token", "secret", "password", "passwd")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
_PLAIN_SCALARS = (int, float, bool, type(None))
_URL_USERINFO = re.compile(
    r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@?#]*:)(?P<password>[^\s/@?#]+)(?=@)"
)
_URL_QUERY = re.compile(
    r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.~%-]+)=)(?P<value>[^&#;\s\"'<>()\[\]]+)"
)
_AUTH_SCHEME = re.compile(r"^(?:Bearer|Basic|Token|Bot|DPoP)\s+(?P<credential>\S+)$", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a name (header, env variable, placeholder, query parameter) looks secret."""
    for word in _WORD.findall(name):
        lower = word.lower()
        if lower in _SECRET_WORDS or lower.endswith(_SECRET_SUFFIXES):
            return True
    return False


def url_credentials(url: str) -> list[str]:
    """The credentials a URL carries, with the forms they take on the wire."""
    try:
        parts = urlsplit(url.strip())
        username, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password:
        found += [password, unquote(password)]
        user = unquote(username or "")
        pair = f"{user}:{unquote(password)}".encode()
        found.append(base64.b64encode(pair).decode("ascii"))  # the Basic header httpx sends
    for match in _URL_QUERY.finditer("?" + parts.query if parts.query else ""):
        if is_secret_name(unquote(match.group("name"))):
            found += [match.group("value"), unquote(match.group("value"))]
    return found


def flag_secrets(args: Iterable[str]) -> list[str]:
    """Values given to secret-looking flags of a command line: `--token X`, `--api-key=X`."""
    found: list[str] = []
    pending = False
    for arg in args:
        if pending and not arg.startswith("-"):
            found.append(arg)
        pending = False
        if arg.startswith("-"):
            name, sep, value = arg.lstrip("-").partition("=")
            if is_secret_name(name):
                if sep:
                    found.append(value)
                else:
                    pending = True
    return found


class Redactor:
    """Replaces secrets by `***` in text and in nested JSON-like values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values: set[str] = set()
        for raw in secrets:
            value = str(raw).strip() if raw is not None else ""
            values.add(value)
            match = _AUTH_SCHEME.match(value)
            if match:  # `Bearer xyz` is masked, and so is `xyz` on its own
                values.add(match.group("credential"))
            if "://" in value:
                values.update(url_credentials(value))
        kept = (v for v in values if len(v) >= MIN_SECRET_LENGTH)
        # Longest first, so a secret containing another one is masked as a whole.
        self.secrets: tuple[str, ...] = tuple(sorted(kept, key=lambda v: (-len(v), v)))
        self._pattern = (
            re.compile("|".join(re.escape(v) for v in self.secrets)) if self.secrets else None
        )

    def add(self, secret: str) -> None:
        """Mask `secret` from now on too (a value learnt while running, e.g. an access token)."""
        value = str(secret).strip()
        if len(value) < MIN_SECRET_LENGTH or value in self.secrets:
            return
        self.secrets = tuple(sorted({*self.secrets, value}, key=lambda v: (-len(v), v)))
        self._pattern = re.compile("|".join(re.escape(v) for v in self.secrets))

    def with_secrets(self, extra: Iterable[str]) -> Redactor:
        """A redactor that also masks `extra`."""
        return Redactor([*self.secrets, *extra])

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every stretch of `text` to mask, in order, not overlapping."""
        found: list[tuple[int, int]] = []
        if self._pattern is not None:
            found += [m.span() for m in self._pattern.finditer(text)]
        if "://" in text:
            found += [m.span("password") for m in _URL_USERINFO.finditer(text)]
        if "=" in text:
            found += [
                m.span("value")
                for m in _URL_QUERY.finditer(text)
                if is_secret_name(unquote(m.group("name")))
            ]
        merged: list[tuple[int, int]] = []
        for start, end in sorted(found):
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def text(self, text: str) -> str:
        """`text` with every secret, and every credential in a URL, masked."""
        if self._pattern is None and "://" not in text and "=" not in text:
            return text  # the common case on every event: nothing to look for
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        last = 0
        for start, end in spans:
            parts += [text[last:start], MASK]
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def preview(self, text: str, limit: int, tail: str = "...") -> str:
        """The masked text cut to `limit` characters (ending in `tail` when cut).

        Masking comes first: a secret cut in half would leak its first characters.
        """
        masked = self.text(text)
        return masked if len(masked) <= limit else masked[: limit - len(tail)] + tail

    def value(self, obj: Any) -> Any:
        """A copy of `obj` (dicts, lists, tuples, strings) with secrets masked in its strings."""
        if isinstance(obj, str):
            return self.text(obj)
        if type(obj) in _PLAIN_SCALARS:  # nothing to mask; skips the slower ABC checks
            return obj
        if isinstance(obj, Mapping):
            return {key: self.value(item) for key, item in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(item) for item in obj]
        return obj


_ACTIVE: ContextVar[Redactor | None] = ContextVar("devall_active_redactor", default=None)


@contextlib.contextmanager
def masking(redactor: Redactor) -> Iterator[None]:
    """Make `redactor` the one `preview` uses while a workflow is being checked."""
    token = _ACTIVE.set(redactor)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def preview(text: str, limit: int) -> str:
    """`text` for a message, masked (by the active redactor, if any) and then cut to `limit`."""
    return (_ACTIVE.get() or _URL_ONLY).preview(text, limit)


_URL_ONLY = Redactor()
