"""Trace entries of an unexpected shape, reduced to the fields `network_events` reads.

A HAR entry normally converts to Arrow in one pass (core.files.network_events); when one entry holds a
number where an object belongs, a list where a string belongs, ..., the whole batch is first reduced
here, one entry at a time, to exactly the fields and types the columns read: a field of the wrong type
is missing, and a missing request, response or header list is counted (`malformed`).
"""

from __future__ import annotations

from typing import Any

INT32 = (-(1 << 31), (1 << 31) - 1)


def plain_entry(entry: Any, malformed: dict[str, int]) -> dict:
    """The fields of ENTRY_TYPE from an entry of any shape, by the type rules of the columns: a field of
    the wrong type is missing (and a missing request, response or header list is counted)."""

    def flag(what: str) -> None:
        malformed[what] = malformed.get(what, 0) + 1

    if type(entry) is not dict:
        flag("entries that are not objects")
        entry = {}
    request, response = entry.get("request"), entry.get("response")
    if type(request) is not dict:
        flag("entries without a request")
        request = {}
    if type(response) is not dict:
        flag("entries without a response")
        response = {}
    headers = request.get("headers")
    if type(headers) is not list:
        flag("entries without request headers")
        headers = []
    content = response.get("content")
    content = content if type(content) is dict else {}
    status = response.get("status")
    return {
        "startedDateTime": _typed(entry.get("startedDateTime"), str),
        "time": _number(entry.get("time")),
        "request": {
            "method": _typed(request.get("method"), str),
            "url": _typed(request.get("url"), str),
            "headers": _pairs(headers),
            "cookies": _cookies(request.get("cookies")),
            "postData": request.get("postData") if type(request.get("postData")) is dict else None,
        },
        "response": {
            "status": status if type(status) is int and INT32[0] <= status <= INT32[1] else None,
            "redirectURL": _typed(response.get("redirectURL"), str),
            # Only Set-Cookie is read from response headers; its value as text, as before.
            "headers": [
                {"name": h["name"], "value": str(h.get("value"))}
                for h in _list(response.get("headers"))
                if type(h) is dict and type(h.get("name")) is str and h["name"].lower() == "set-cookie"
            ],
            "cookies": _cookies(response.get("cookies")),
            "bodySize": _number(response.get("bodySize")),
            "content": {
                "size": _number(content.get("size")),
                "mimeType": _typed(content.get("mimeType"), str),
            },
        },
    }


def _typed(value: Any, kind: type) -> Any:
    return value if type(value) is kind else None


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and abs(value) < 1e308 else None


def _list(value: Any) -> list:
    return value if type(value) is list else []


def _pairs(headers: list) -> list[dict]:
    return [
        {"name": h.get("name"), "value": h.get("value")}
        for h in headers
        if type(h) is dict and type(h.get("name")) is str and type(h.get("value")) is str
    ]


def _cookies(cookies: Any) -> list[dict]:
    return [{"value": c["value"]} for c in _list(cookies) if type(c) is dict and type(c.get("value")) is str]
