"""OpenTelemetry export of a command's runs over OTLP/HTTP (docs/otel.md).

Tracing is on with `--otel` (or `--otel-content`), or when one of the standard variables
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` is set (unless
`OTEL_SDK_DISABLED=true`). Without an endpoint the spans go to the OTLP default on this
machine, never to another host. `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_SERVICE_NAME` are read
as the SDK reads them. The SDK and its exporter (the `otel` extra) are imported only by
`Tracing`, built only when tracing is on: every other command starts without them.

The provider is devall's own, never the process-wide one: fastmcp's client makes spans of its
own on the global provider, which stays the API's no-op, so no stray trace is sent. `close()`
flushes for `FLUSH_SECONDS` at most: a collector that is down or hangs costs that long, then
one warning line.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from devall_cli import __version__
from devall_cli.errors import UsageError
from devall_cli.redaction import Redactor

if TYPE_CHECKING:
    from devall_cli.config.model import Workflow
    from devall_cli.trace.otel import OtelSink

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"  # the OTLP/HTTP default, on loopback
TRACES_PATH = "/v1/traces"
FLUSH_SECONDS = 3.0  # the most the end of a command waits for the collector
EXPORT_SECONDS = 2.5  # one export, retries included (within the flush, so its reason is known)
QUEUE_SPANS = 16_384  # spans held for export at once (more are dropped, and counted)
SERVICE_NAME = "devall"
EXTRA_HINT = "pip install 'devall-cli[otel]'"
_SHOWN_CHARS = 300
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^\"')\]]+)")


@dataclass(frozen=True)
class OtelSettings:
    """Where the spans go and what they hold."""

    endpoint: str  # the URL spans are POSTed to (…/v1/traces)
    service_name: str = SERVICE_NAME
    content: bool = False  # record message content (task, outputs, replies, tool arguments)
    asked: bool = True  # asked for on the command line (else only by an OTEL_ variable)


def otel_settings(
    enabled: bool, content: bool, environ: Mapping[str, str]
) -> OtelSettings | None:
    """The settings, or None when tracing is off; a UsageError for an endpoint that is no URL."""
    asked = enabled or content
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    disabled = environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    if not asked and (disabled or not (traces or base)):
        return None
    if traces:
        endpoint, name = traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    else:  # a base URL: the traces path is added, as the SDK adds it
        endpoint = (base or DEFAULT_ENDPOINT).rstrip("/") + TRACES_PATH
        name = "OTEL_EXPORTER_OTLP_ENDPOINT"
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        shown = Redactor().text(endpoint)
        raise UsageError(f"{name} must be an http:// or https:// URL, not '{shown}'")
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE_NAME
    return OtelSettings(endpoint, service, content=content, asked=asked)


def sdk_installed() -> bool:
    """Whether the `otel` extra (the SDK and the OTLP/HTTP exporter) is installed."""
    try:
        found = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http")
        return found is not None and importlib.util.find_spec("opentelemetry.sdk") is not None
    except ImportError:  # not even the `opentelemetry` namespace
        return False


class _Failures(logging.Handler):
    """Keeps the SDK's complaints instead of printing them: whether spans were lost, and why
    (the first complaint that names an OS error, such as `connection refused`, else the first)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.lost = False

    def emit(self, record: logging.LogRecord) -> None:
        message = (record.getMessage().splitlines() or [""])[0]
        if len(self.messages) < 20:
            self.messages.append(message)
        # A retry that then succeeds loses nothing; a failed export or a full queue does.
        self.lost = self.lost or record.levelno >= logging.ERROR or "dropping" in message

    @property
    def reason(self) -> str | None:
        """Why the spans were not sent, in a few words."""
        for message in self.messages:
            if found := _ERRNO.search(message):
                return found.group(1).strip().lower()
        if any("timeout" in m or "timed out" in m for m in self.messages):
            return f"no answer within {EXPORT_SECONDS:g} s"
        return self.messages[0] if self.messages else None


class Tracing:
    """The command's tracer and exporter: a sink per run, one bounded flush at the end."""

    def __init__(self, settings: OtelSettings) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.settings = settings
        self._failures = _Failures()
        sdk_log = logging.getLogger("opentelemetry")
        sdk_log.addHandler(self._failures)
        sdk_log.propagate = False  # its tracebacks and retries are not devall's output
        if not any(isinstance(h, logging.NullHandler) for h in sdk_log.handlers):
            # Also once `close()` stopped listening: without a handler Python would print them.
            sdk_log.addHandler(logging.NullHandler())
        resource = Resource.create(
            {"service.name": settings.service_name, "service.version": __version__}
        )
        # shutdown_on_exit=False: an exit-time flush could wait on a dead collector.
        self._provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        exporter = OTLPSpanExporter(endpoint=settings.endpoint, timeout=EXPORT_SECONDS)
        self._provider.add_span_processor(
            BatchSpanProcessor(exporter, max_queue_size=QUEUE_SPANS)
        )
        self.tracer = self._provider.get_tracer("devall", __version__)

    def sink(self, workflow: Workflow, redactor: Redactor) -> OtelSink:
        """A new sink for one run of `workflow`, masking with the run's `redactor`."""
        from devall_cli.trace.otel import OtelSink
        from devall_cli.trace.otel_attributes import node_infos

        return OtelSink(
            self.tracer, redactor, node_infos(workflow), content=self.settings.content
        )

    def close(self) -> str | None:
        """Send the spans left, waiting `FLUSH_SECONDS` at most; a warning when some were lost."""
        done = threading.Event()

        def flush() -> None:
            try:
                self._provider.shutdown()
            except Exception as exc:  # on a thread: it would print a traceback
                self._failures.lost = True
                self._failures.messages.insert(0, f"{type(exc).__name__}: {exc}")
            finally:
                done.set()

        threading.Thread(target=flush, name="devall-otel-flush", daemon=True).start()
        finished = done.wait(FLUSH_SECONDS)
        logging.getLogger("opentelemetry").removeHandler(self._failures)
        where = Redactor().text(self.settings.endpoint)
        reason = self._failures.reason
        if not finished:
            why = f" ({_shown(reason)})" if reason else ""
            return f"OpenTelemetry: gave up sending spans to {where} after {FLUSH_SECONDS:g} s{why}"
        if self._failures.lost:
            return f"OpenTelemetry: spans not sent to {where}: {_shown(reason or 'export failed')}"
        return None


def _shown(text: str) -> str:
    masked = Redactor().text(text)
    return masked if len(masked) <= _SHOWN_CHARS else masked[:_SHOWN_CHARS] + "..."
