"""HTTP plumbing for the plugin's routes: JSON responses, errors as JSON, parameter checks.

Every response goes through tensorboard's ``http_util.Respond`` (nosniff, no-cache,
gzip); JSON bodies are encoded by :mod:`.presenters.json_encode` (msgspec).  Handlers
raise :class:`HttpError`; the service's Pending / NotParsed / Unusable become 202 / 409 /
422; a bad parameter (:class:`HttpError` 400 from the checks here, or the service's
BadParameter) is a 400 whose body names ``parameter`` and, where they are known, the valid
``choices``; a method the route does not take is a 405 with an ``Allow`` header; anything
unexpected becomes a JSON 500 with a one-line message, never an exception escaping into
TensorBoard.
"""
from __future__ import annotations

import json
import logging
import math

from tensorboard.backend import http_util
from werkzeug import wrappers

from .loaders.errors import LoadError
from .presenters import json_encode
from .service.errors import BadParameter, NotParsed, Pending, Unusable

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


def bad_param(name: str, message: str, choices=None) -> HttpError:
    """A 400 naming the query parameter (or JSON body field) ``name`` and its valid ``choices``."""
    extra = {"parameter": name}
    if choices is not None:
        extra["choices"] = list(choices)
    return HttpError(400, message, **extra)


def route(handler, tidy=None, methods=("GET",)):
    """Wrap a handler(request) -> response; map every failure to a JSON error.  ``tidy``: how
    an error's text is shown (the plugin's: paths relative to the logdir).  ``methods``: what
    the route takes (HEAD with GET); any other method is a 405 naming them in ``Allow``."""
    tidy = tidy or (lambda s: s)
    allowed = tuple(methods) + (("HEAD",) if "GET" in methods and "HEAD" not in methods else ())
    allow = ", ".join(allowed)

    @wrappers.Request.application
    def app(request):
        if request.method not in allowed:
            resp = error_response(request, 405, f"method {request.method[:16]} is not allowed here; "
                                  f"this route takes {allow}")
            resp.headers["Allow"] = allow
            return resp
        try:
            return handler(request)
        except BadParameter as e:
            extra = {"parameter": e.parameter}
            if e.choices is not None:
                extra["choices"] = e.choices
            msg = e.message if repr(e.parameter) in e.message else f"parameter {e.parameter!r}: {e.message}"
            return error_response(request, 400, tidy(msg), **extra)
        except HttpError as e:
            if e.code == 405:
                resp = error_response(request, 405, tidy(e.message), **e.extra)
                resp.headers["Allow"] = allow
                return resp
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
            raise bad_param(name, f"missing query parameter {name!r}")
        return default
    if len(v) > max_len:
        raise bad_param(name, f"query parameter {name!r} is too long")
    return v


def int_arg(request, name: str, default=None, lo=None, hi=None, choices=None):
    """An optional integer parameter; ``choices`` (e.g. the steps known) are named when it is not one."""
    v = arg(request, name, required=False, default=None)
    if v is None:
        return default
    try:
        n = int(v)
    except ValueError:
        known = f" (valid values: {', '.join(map(str, choices))})" if choices else ""
        raise bad_param(name, f"query parameter {name!r} must be an integer, got {v[:40]!r}{known}",
                        choices if choices else None)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise bad_param(name, f"query parameter {name!r} must be between {lo} and {hi}")
    return n


def float_arg(request, name: str, default=None):
    v = arg(request, name, required=False)
    if v is None:
        return default
    try:
        f = float(v)
    except ValueError:
        raise bad_param(name, f"query parameter {name!r} must be a number, got {v[:40]!r}")
    if not math.isfinite(f):
        raise bad_param(name, f"query parameter {name!r} must be finite")
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
