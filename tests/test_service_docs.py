"""``/docs`` and ``/redoc`` load nothing from another host: every script, style sheet,
icon and document the pages name is the service's own, and answers without the key
when ``PICK_OPEN_DOCS`` opens the documentation. (``tests/test_docs_offline.py``
opens the pages in Chromium with the network unreachable.)"""

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest

KEY = {"Authorization": "Bearer s3cret"}


class PageReferences(HTMLParser):
    """``(kind, url)`` of what a page loads: ``script``, ``stylesheet``, ``icon`` and ReDoc's ``spec``."""

    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, str]] = []
        self.inline_scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script" and attributes.get("src"):
            self.found.append(("script", attributes["src"]))
        elif tag == "script":
            self._in_script = True
        elif tag == "link":
            kind = "stylesheet" if attributes.get("rel") == "stylesheet" else "icon"
            self.found.append((kind, attributes["href"]))
        elif tag == "redoc":
            self.found.append(("spec", attributes["spec-url"]))
        elif attributes.get("src") or attributes.get("href"):
            self.found.append((tag, attributes.get("src") or attributes.get("href")))

    def handle_endtag(self, tag):
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data):
        if self._in_script:
            self.inline_scripts.append(data)


def references(html: str) -> PageReferences:
    parser = PageReferences()
    parser.feed(html)
    return parser


#: The content type each kind of reference must come back with.
CONTENT_TYPES = {"script": "text/javascript", "stylesheet": "text/css", "icon": "image/svg+xml",
                 "spec": "application/json"}


@pytest.mark.parametrize("page, kinds", [("/docs", {"script", "stylesheet", "icon", "spec"}),
                                         ("/redoc", {"script", "icon", "spec"})])
def test_the_documentation_pages_load_only_the_services_own_files(make_client, page, kinds):
    client = make_client(api_key="s3cret", open_docs=True)
    response = client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    parsed = references(response.text)
    found = list(parsed.found)
    # Swagger UI is told where the document is in its inline script, not in an attribute.
    found += [("spec", url) for url in re.findall(r"\burl: '([^']*)'", "".join(parsed.inline_scripts))]
    assert {kind for kind, _ in found} == kinds, found
    for kind, url in found:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page} loads {url} from elsewhere"
        # Without the key: what the page loads is as open as the page itself.
        answer = client.get(urljoin(f"http://testserver{page}", url))
        assert answer.status_code == 200, (url, answer.text[:200])
        assert answer.headers["content-type"].split(";")[0] == CONTENT_TYPES[kind], url
        assert answer.content, url
    scripts = [client.get(url).text for kind, url in found if kind == "script"]
    # The files are the real libraries, which define what the page calls.
    entry_point = "SwaggerUIBundle" if page == "/docs" else "Redoc"
    assert len(scripts) == 1 and entry_point in scripts[0][:2000] and len(scripts[0]) > 500_000


def test_the_pages_files_need_the_key_like_the_pages(make_client):
    client = make_client(api_key="s3cret")
    for page in ("/docs", "/redoc"):
        assert client.get(page).status_code == 401
        for kind, url in references(client.get(page, headers=KEY).text).found:
            if kind == "script" or kind == "stylesheet":
                assert client.get(url).status_code == 401, url
                assert client.get(url, headers=KEY).status_code == 200, url


def test_the_pages_files_refuse_what_a_file_cannot_do_in_our_words(make_client):
    client = make_client()
    stylesheet = next(url for kind, url in references(client.get("/docs").text).found if kind == "stylesheet")
    response = client.post(stylesheet)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, OPTIONS"
    assert response.json() == {"detail": f"POST is not a method of {stylesheet}: it takes GET, HEAD, OPTIONS"}
    assert client.head(stylesheet).status_code == 200
    missing = stylesheet.rsplit("/", 1)[0] + "/nothing.js"
    response = client.get(missing)
    assert response.status_code == 404
    assert response.json() == {"detail": f"no route {missing!r}: /docs lists the API"}
