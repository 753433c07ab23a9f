"""``/docs`` and ``/redoc`` render in a real headless Chromium that can reach nothing but the service.

The service (a real ``python -m service``, with an API key and ``PICK_OPEN_DOCS``)
is reached under a name of its own, ``docs.test``, as a deployed service would be;
every other name resolves to nothing and every other address goes to a proxy that
refuses, so a page that needed a CDN would stay blank (it does with FastAPI's own
pages). Both pages must render the API (Swagger UI the pick operation's block,
ReDoc the title and the pick operation's heading), and Chromium's own record of
the page's requests must show none to another host but ReDoc's logo
(:data:`REDOC_LOGO`).

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them).
"""

import json
from urllib.parse import urlsplit

import pytest

from testkit.browser import NO_CHROMIUM, chromium, chromium_installed
from testkit.servers import free_port, start_server

pytestmark = pytest.mark.skipif(not chromium_installed(), reason=NO_CHROMIUM)

pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'")
from selenium.common.exceptions import WebDriverException  # noqa: E402  (after the skips)
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

#: The service's name in the browser (``.test`` is reserved for testing, RFC 6761).
HOST = "docs.test"

#: Loading a page and its 1-2 MB of script, and the script drawing the API.
PAGE_TIMEOUT = 60.0

#: What a page may load without any network: inline data and the page's own objects.
LOCAL_SCHEMES = {"data", "blob", "about"}

#: The one thing ReDoc 2 asks another host for: the Redocly logo beside "API docs by Redocly" at the
#: foot of its menu, an image its code names with no option to leave it out (neither a script nor a
#: style sheet). Offline it fails and ReDoc takes the image out; the page is whole without it.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    """The port of a service with an API key whose documentation is open (no kernel is needed:
    not compiled at start-up)."""
    directory = tmp_path_factory.mktemp("docs-server")
    port = free_port()
    process = start_server(directory, port, settings={"PICK_API_KEY": "docs-test-key", "PICK_OPEN_DOCS": "true",
                                                      "PICK_WARM_UP": "false"})
    try:
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Chromium with the network out of reach: only ``docs.test`` resolves (to the service's address),
    and every request not for it goes to a proxy on a port nothing listens on."""
    refused = free_port()
    with chromium(tmp_path_factory.mktemp("chromium-profile"),
                  f"--host-resolver-rules=MAP {HOST} 127.0.0.1, MAP * ~NOTFOUND",
                  f"--proxy-server=http://127.0.0.1:{refused}", f"--proxy-bypass-list={HOST}",
                  logs=("browser", "performance")) as driver:
        yield driver


def requests_made(driver) -> list[str]:
    """The URL of every request the page made since the last call, from the DevTools events."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def assert_only_the_service_was_asked(urls: list[str], port: int, besides: frozenset = frozenset()) -> None:
    elsewhere = [url for url in urls if urlsplit(url).scheme not in LOCAL_SCHEMES
                 and urlsplit(url).netloc != f"{HOST}:{port}" and url not in besides]
    assert not elsewhere, f"requests to other hosts: {elsewhere}"


def assert_no_errors(driver, besides: frozenset = frozenset()) -> None:
    errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
              and not any(url in entry["message"] for url in besides)]
    assert not errors, errors


def wait_for(driver, find, what: str):
    return WebDriverWait(driver, PAGE_TIMEOUT).until(lambda _: find(), message=f"waiting for {what}")


@pytest.mark.parametrize("url", ["https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css",
                                 "http://cdn.jsdelivr.net/npm/redoc@2/bundles/redoc.standalone.js",
                                 "http://93.184.215.14/"])
def test_the_browser_reaches_nothing_but_the_service(browser, port, url):
    # The premise of the tests below: what FastAPI's own pages load, by name or by address, fails.
    with pytest.raises(WebDriverException, match="ERR_"):
        browser.get(url)
    requests_made(browser)
    browser.get_log("browser")


def test_swagger_ui_renders_without_the_network(browser, port):
    requests_made(browser)
    browser.get(f"http://{HOST}:{port}/docs")
    pick = wait_for(browser, lambda: browser.find_elements(
        By.CSS_SELECTOR, ".opblock-post .opblock-summary-path[data-path='/scenes/{scene_id}/pick']"),
        "the pick operation's block")
    assert pick[0].is_displayed()
    assert "bvh-pick" in browser.find_element(By.CSS_SELECTOR, ".info .title").text
    # Every operation is drawn, not only the first: a block per tag's operation.
    assert len(browser.find_elements(By.CSS_SELECTOR, ".opblock")) > 20
    urls = requests_made(browser)
    assert f"http://{HOST}:{port}/docs/static/swagger-ui-bundle.js" in urls
    assert f"http://{HOST}:{port}/openapi.json" in urls
    assert_only_the_service_was_asked(urls, port)
    assert_no_errors(browser)


def test_redoc_renders_without_the_network(browser, port):
    requests_made(browser)
    browser.get(f"http://{HOST}:{port}/redoc")
    title = wait_for(browser, lambda: [heading for heading in browser.find_elements(By.TAG_NAME, "h1")
                                       if "bvh-pick" in heading.text], "the API's title")
    assert title[0].is_displayed()
    heading = wait_for(browser, lambda: [heading for heading in browser.find_elements(By.TAG_NAME, "h2")
                                         if heading.text == "Pick"], "the pick operation's heading")
    browser.execute_script("arguments[0].scrollIntoView()", heading[0])
    assert heading[0].is_displayed()
    # The menu lists the operations too.
    assert wait_for(browser, lambda: [item for item in browser.find_elements(By.CSS_SELECTOR, "[role=menuitem]")
                                      if item.text.endswith("Pick")], "the pick operation in the menu")
    # The logo that could not load is gone, not a broken image.
    wait_for(browser, lambda: not browser.find_elements(By.CSS_SELECTOR, f"img[src='{REDOC_LOGO}']"),
             "ReDoc to drop the logo it could not load")
    urls = requests_made(browser)
    assert f"http://{HOST}:{port}/docs/static/redoc.standalone.js" in urls
    assert f"http://{HOST}:{port}/openapi.json" in urls
    assert_only_the_service_was_asked(urls, port, besides=frozenset({REDOC_LOGO}))
    assert_no_errors(browser, besides=frozenset({REDOC_LOGO}))
