"""What a proxy caller sees of a failed upstream call: hmem's error shape with the
upstream's status and a short summary of its error, never its body as it came.

An upstream may echo what it received (the key, the URL with its query) in its error;
the summary keeps the fields of OpenAI's error object a caller can act on, with every
configured secret scrubbed (:func:`hmem._secrets.redact_json`) before each text is cut.

Example::

    >>> import json
    >>> echoed = {"error": {"message": "bad key sk-12345", "code": "invalid_api_key", "headers": {"a": "b"}}}
    >>> json.loads(upstream_error(401, echoed, ["sk-12345"]).body)["error"]["details"]
    {'upstream': {'message': 'bad key ****', 'code': 'invalid_api_key'}}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi.responses import JSONResponse

from hmem._secrets import redact_json
from hmem.server.errors import error_response

__all__ = ["UPSTREAM_FIELDS", "UPSTREAM_TEXT_CHARS", "upstream_error"]

#: The fields of an upstream's error the caller gets (OpenAI's error object).
UPSTREAM_FIELDS = ("message", "type", "code", "param")
#: Each text field is cut to this many characters: enough to act on.
UPSTREAM_TEXT_CHARS = 500


def upstream_error(status: int, answer: Any, secrets: Iterable[str], kind: str = "upstream_error") -> JSONResponse:
    """hmem's error for a failed upstream call: the upstream's ``status``, and the message,
    type, code and param of its error (``details.upstream``) with every one of
    ``secrets`` scrubbed."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, str):  # {"error": "..."}: servers that are not quite OpenAI's shape
        error = {"message": error}
    elif not isinstance(error, dict) and isinstance(answer, dict):  # {"detail": "..."}, {"message": "..."}
        said = answer.get("message", answer.get("detail"))
        error = {"message": said} if isinstance(said, str) else None
    fields = {name: value for name in UPSTREAM_FIELDS if isinstance(error, dict) and (
        isinstance(value := error.get(name), str) or (name == "code" and type(value) is int))}
    # Scrubbed before it is cut: a cut could leave the head of a secret that no longer matches.
    summary = {name: value[:UPSTREAM_TEXT_CHARS] if isinstance(value, str) else value
               for name, value in redact_json(fields, secrets).items()}
    message = f"the upstream answered {status}: {summary.get('message') or 'no error message'}"
    return error_response(status, kind, message, details={"upstream": summary})
