"""The demo's one constructed network case: a 502 answer, since no trace in our licensed sources has a 5xx.

Built the way the official webarena-verified repository builds its own network test cases (its
tests/conftest.py: `create_navigation_network_event` fills a copy of `tests/assets/har_entry_template.json`
with a method, a URL, navigation headers and a response status; `create_har_content_mock` puts it into a
copy of a real HAR). Here the real HAR is the official demo run's task 107 trace (an admin session that ends
on the customer grid), and one entry is appended, from the shipped template: the agent then loads the Magento
Blank theme's settings page and nginx answers 502 Bad Gateway with its stock error page. Task 374 ("Go to the
Magento Blank theme settings page") expects that navigation with status 200, so the engine sees the right page
answered 502 and decides the verdict itself. Nothing here was recorded: it is constructed, and named so in
data/demo/README.md and data/demo/webarena-verified/README.md.
"""

from __future__ import annotations

import copy
from pathlib import Path

import orjson

SERVER_ERROR_TASK = 374
SERVER_ERROR_STATUS = 502
SERVER_ERROR_BASE = ("demo-run", "107", "network.har")  # the real trace the constructed entry is appended to
SERVER_ERROR_URL = "http://192.168.1.35:7780/admin/admin/system_design_theme/edit/id/1/"
TEMPLATE = ("test-assets", "har_entry_template.json")

_REFERER = "http://192.168.1.35:7780/admin/customer/index/"  # the base trace's last page
_STARTED = "2025-10-19T14:40:53.874Z"  # after the base trace's last entry (14:40:51.211Z)
_DOCUMENT_ACCEPT = (
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,"
    "application/signed-exchange;v=b3;q=0.7"
)
# nginx's stock page for 502, as nginx/1.22.1 (the template's server) sends it.
_BODY = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
    "</center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
)


def server_error_entry(template: dict) -> dict:
    """The template filled as the official `create_navigation_network_event` fills it: a document GET
    (sec-fetch navigation headers, an HTML Accept), its URL, and the response status; plus the referer and
    host of the base trace, and the headers and body nginx sends with a 502 (no PHP ran, so no cookies)."""
    entry = copy.deepcopy(template)
    request, response = entry["request"], entry["response"]
    request["method"], request["url"] = "GET", SERVER_ERROR_URL
    replaced = {"accept", "referer", "host"}
    request["headers"] = [h for h in request["headers"] if h["name"].lower() not in replaced] + [
        {"name": "Accept", "value": _DOCUMENT_ACCEPT},
        {"name": "Referer", "value": _REFERER},
        {"name": "Host", "value": "192.168.1.35:7780"},
        {"name": "sec-fetch-dest", "value": "document"},
        {"name": "sec-fetch-mode", "value": "navigate"},
        {"name": "sec-fetch-user", "value": "?1"},
    ]
    response["status"], response["statusText"] = SERVER_ERROR_STATUS, "Bad Gateway"
    response["headers"] = [
        {"name": "Server", "value": "nginx/1.22.1"},
        {"name": "Date", "value": "Sun, 19 Oct 2025 14:40:53 GMT"},
        {"name": "Content-Type", "value": "text/html"},
        {"name": "Content-Length", "value": str(len(_BODY))},
        {"name": "Connection", "value": "keep-alive"},
    ]
    response["content"] = {"size": len(_BODY), "mimeType": "text/html", "text": _BODY}
    entry["startedDateTime"] = _STARTED
    return entry


def write_server_error_har(wav: Path, out: Path) -> None:
    """The base trace with the constructed entry appended, written to `out`."""
    har = orjson.loads(wav.joinpath(*SERVER_ERROR_BASE).read_bytes())
    template = orjson.loads(wav.joinpath(*TEMPLATE).read_bytes())
    har["log"]["entries"].append(server_error_entry(template))
    out.write_bytes(orjson.dumps(har))
