"""Site placeholders: one spelling for a WebArena page whatever host the run used.

Task configs name sites by placeholder (`__GITLAB__/a11yproject/...`, as in the original test.raw.json) or
by the host the run used (`http://ecs_ip:8023/...`, `http://ec2-3-149-...amazonaws.com:8023/...`). Both
sides of a URL comparison are brought to the placeholder form, read from the standard WebArena ports
(shopping 7770, shopping admin 7780 + `/admin`, gitlab 8023, reddit 9999, map 3000, wikipedia 8888 +
its zim path, homepage 4399). A URL on any other port or host (an off-site page) stays as recorded.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Placeholder -> the path prefix the site's base URL carries after its origin (WebArena's README).
_PREFIX = {
    "__SHOPPING_ADMIN__": "/admin",
    "__WIKIPEDIA__": "/wikipedia_en_all_maxi_2022-05/A",
}
_PORTS = {
    7770: "__SHOPPING__", 7780: "__SHOPPING_ADMIN__", 8023: "__GITLAB__", 9999: "__REDDIT__",
    3000: "__MAP__", 8888: "__WIKIPEDIA__", 4399: "__HOMEPAGE__",
}  # fmt: skip
PLACEHOLDERS = tuple(sorted(set(_PORTS.values()), key=len, reverse=True))


def canonical_url(url: str) -> str:
    """`http://ecs_ip:8023/a/b?x=1` -> `__GITLAB__/a/b?x=1`; placeholders and off-site URLs unchanged."""
    url = url.strip()
    if url.startswith(PLACEHOLDERS):
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a malformed port or bracket: not a site URL
        return url
    placeholder = _PORTS.get(port) if parts.scheme in ("http", "https") else None
    if placeholder is None:
        return url
    path = parts.path
    prefix = _PREFIX.get(placeholder)
    if prefix is not None:
        if path == prefix or path.startswith(prefix + "/"):
            path = path[len(prefix) :]
        else:  # the site's host outside its base path: keep it distinct from the placeholder form
            placeholder = placeholder[:-2] + "_HOST__"
    tail = (
        path + (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")
    )
    return placeholder + tail
