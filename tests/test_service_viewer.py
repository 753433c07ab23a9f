"""The service's root and the viewer's icon: open without the API key, left out of the OpenAPI."""


def test_root_redirects_to_the_viewer(make_client):
    client = make_client(api_key="s3cret")
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 302
    # Relative: behind a proxy that adds a path prefix, the redirect stays under it.
    assert response.headers["location"] == "viewer"
    followed = client.get("/")
    assert followed.status_code == 200 and str(followed.url).endswith("/viewer")
    assert followed.headers["content-type"].startswith("text/html")


def test_favicon_is_the_projects_own_svg(make_client):
    client = make_client(api_key="s3cret")
    for path in ("/favicon.ico", "/viewer/favicon.svg"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"] == "image/svg+xml"
        assert response.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    page = client.get("/viewer").text
    assert '<link rel="icon" href="viewer/favicon.svg" type="image/svg+xml">' in page


def test_root_and_icon_are_not_in_the_api_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert not {"/", "/favicon.ico", "/viewer", "/viewer/{name}"} & set(paths)
