"""The `gemini` provider descriptor: Google's Gemini API (`generateContent`), over httpx.

This module stays light (no httpx): it says how `params` map onto the request, warns at
validate time about params Gemini is not sent, and imports the client only in `make`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from devall_cli.config.schema import Checker
from devall_cli.config.yaml_source import KeyPath
from devall_cli.providers.base import RESERVED_PARAMS, plain
from devall_cli.providers.registry import PROVIDERS, ProviderType

if TYPE_CHECKING:
    from devall_cli.providers.base import ModelSettings, Provider

# params key (snake_case as ChatDev writes it) -> generationConfig field
GENERATION_FIELDS = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "candidate_count": "candidateCount",
    "max_output_tokens": "maxOutputTokens",
    "max_tokens": "maxOutputTokens",  # the OpenAI name (ChatDev drops it)
    "stop_sequences": "stopSequences",
    "stop": "stopSequences",  # the OpenAI name
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "response_modalities": "responseModalities",
    "response_mime_type": "responseMimeType",
    "thinking_config": "thinkingConfig",
    "image_config": "imageConfig",
    "speech_config": "speechConfig",
    "media_resolution": "mediaResolution",
}
# params key -> top-level request field
REQUEST_FIELDS = {
    "safety_settings": "safetySettings",
    "tool_config": "toolConfig",
    "cached_content": "cachedContent",
}
# Read by the mapping below, in place of a field of their own.
SPECIAL_KEYS = frozenset({"aspect_ratio", "function_calling_config"})
_CAMEL = {camel: camel for camel in (*GENERATION_FIELDS.values(), *REQUEST_FIELDS.values())}
KNOWN_PARAMS = frozenset({*GENERATION_FIELDS, *REQUEST_FIELDS, *SPECIAL_KEYS, *_CAMEL})


def request_fields(params: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields `params` set: generationConfig, safetySettings, toolConfig, ...

    The snake_case names ChatDev uses and the API's camelCase names are both accepted; an
    explicit name wins over its OpenAI alias (`max_output_tokens` over `max_tokens`).
    """
    generation: dict[str, Any] = {}
    request: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        field = GENERATION_FIELDS.get(key) or (key if key in GENERATION_FIELDS.values() else None)
        if field is not None:
            if key in ("max_tokens", "stop") and field in generation:
                continue
            generation[field] = _generation_value(field, value)
            continue
        field = REQUEST_FIELDS.get(key) or (key if key in REQUEST_FIELDS.values() else None)
        if field is not None:
            request[field] = plain(value)
    _special(params, generation, request)
    if generation:
        request["generationConfig"] = generation
    return request


def _generation_value(field: str, value: Any) -> Any:
    if field == "stopSequences" and isinstance(value, str):
        return [value]
    if field == "responseModalities" and isinstance(value, list | tuple):
        return [str(v).upper() for v in value]  # ChatDev's examples write ["text", "image"]
    return plain(value)


def _special(
    params: Mapping[str, Any], generation: dict[str, Any], request: dict[str, Any]
) -> None:
    ratio = params.get("aspect_ratio")
    if ratio is not None:
        image = generation.setdefault("imageConfig", {})
        if isinstance(image, dict):
            image.setdefault("aspectRatio", ratio)
    calling = params.get("function_calling_config")
    if calling is not None:
        if isinstance(calling, str):
            calling = {"mode": calling.upper()}
        tool_config = request.setdefault("toolConfig", {})
        if isinstance(tool_config, dict):
            tool_config["functionCallingConfig"] = plain(calling)


def check_params(ck: Checker, config: dict[str, Any], path: KeyPath) -> None:
    """Warn about each params key the gemini provider does not send (ChatDev drops them too)."""
    params = config.get("params")
    if not isinstance(params, Mapping):
        return
    for key in params:
        if key not in KNOWN_PARAMS and key not in RESERVED_PARAMS:
            ck.warning(
                (*path, "params", key),
                f"params.{key} is not sent by 'provider: gemini' (ignored); it sends "
                "temperature, top_p, top_k, max_output_tokens (or max_tokens), stop_sequences, "
                "seed, safety_settings, tool_config and the other generateContent fields",
                at_key=True,
            )


def make_gemini(config: ModelSettings, **options: Any) -> Provider:
    """A GeminiProvider (httpx is imported here, when a run needs it)."""
    from devall_cli.providers.gemini_client import GeminiProvider

    options.pop("state", None)  # nothing to keep between visits
    return GeminiProvider(config, **options)


GEMINI = PROVIDERS.register(
    ProviderType(
        "gemini",
        "Google's Gemini API (generateContent): tools, images in and out",
        make=make_gemini,
        parse=check_params,
        secret_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    )
)
