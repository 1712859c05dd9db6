"""HTTP plumbing for the plugin's routes: JSON responses, errors as JSON, parameter checks.

Every response goes through tensorboard's ``http_util.Respond`` (nosniff, no-cache,
gzip); JSON bodies are encoded by :mod:`.presenters.json_encode` (msgspec).  Handlers
raise :class:`HttpError`; the service's Pending / NotParsed / Unusable become 202 / 409 /
422; anything unexpected becomes a JSON 500 with a one-line message, never an exception
escaping into TensorBoard.
"""
from __future__ import annotations

import json
import logging
import math

from tensorboard.backend import http_util
from werkzeug import wrappers

from .loaders.errors import LoadError
from .presenters import json_encode
from .service.errors import NotParsed, Pending, Unusable

log = logging.getLogger(__name__)
MAX_BODY = 64 * 1024


class HttpError(Exception):
    def __init__(self, code: int, message: str, **extra) -> None:
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra


dumps = json_encode.dumps        # the answers' JSON text (also used by the CLI's --json)


def json_response(request, obj, code: int = 200):
    return http_util.Respond(request, json_encode.encode(obj), "application/json", code=code)


def error_response(request, code: int, message: str, **extra):
    body = {"error": message}
    body.update(extra)
    return json_response(request, body, code)


def route(handler, tidy=None):
    """Wrap a handler(request) -> response; map every failure to a JSON error.  ``tidy``: how
    an error's text is shown (the plugin's: paths relative to the logdir)."""
    tidy = tidy or (lambda s: s)

    @wrappers.Request.application
    def app(request):
        try:
            return handler(request)
        except HttpError as e:
            return error_response(request, e.code, tidy(e.message), **e.extra)
        except Pending as e:
            return error_response(request, 202, tidy(e.message), status="loading", progress=e.progress)
        except NotParsed as e:
            extra = {"workers": e.workers} if e.workers is not None else {}
            return error_response(request, 409, tidy(e.message), status="not_loaded", **extra)
        except Unusable as e:
            return error_response(request, 422, tidy(e.message))
        except LoadError as e:
            return error_response(request, 422, tidy(str(e)))
        except Exception as e:  # noqa: BLE001 - TensorBoard must never see an exception
            log.exception("profile_compare: %s failed", request.path)
            return error_response(request, 500, tidy(f"internal error: {type(e).__name__}: {e}"))
    return app


def arg(request, name: str, required: bool = True, default=None, max_len: int = 4096):
    v = request.args.get(name)
    if v is None or v == "":
        if required:
            raise HttpError(400, f"missing query parameter {name!r}")
        return default
    if len(v) > max_len:
        raise HttpError(400, f"query parameter {name!r} is too long")
    return v


def int_arg(request, name: str, default=None, lo=None, hi=None):
    v = arg(request, name, required=default is None and lo is None and hi is None and False, default=None)
    if v is None:
        return default
    try:
        n = int(v)
    except ValueError:
        raise HttpError(400, f"query parameter {name!r} must be an integer, got {v[:40]!r}")
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise HttpError(400, f"query parameter {name!r} must be between {lo} and {hi}")
    return n


def float_arg(request, name: str, default=None):
    v = arg(request, name, required=False)
    if v is None:
        return default
    try:
        f = float(v)
    except ValueError:
        raise HttpError(400, f"query parameter {name!r} must be a number, got {v[:40]!r}")
    if not math.isfinite(f):
        raise HttpError(400, f"query parameter {name!r} must be finite")
    return f


def json_body(request) -> dict:
    """The body of a POST that starts work: must be JSON (a cross-site form cannot send it)."""
    if request.method != "POST":
        raise HttpError(405, "this route only accepts POST")
    ctype = (request.mimetype or "").lower()
    if ctype != "application/json":
        raise HttpError(415, "Content-Type must be application/json")
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise HttpError(413, "request body too large")
    raw = request.get_data(cache=False, as_text=False)[: MAX_BODY + 1]
    if len(raw) > MAX_BODY:
        raise HttpError(413, "request body too large")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise HttpError(400, "request body is not valid JSON")
    if not isinstance(body, dict):
        raise HttpError(400, "request body must be a JSON object")
    return body
