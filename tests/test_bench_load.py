"""``bench/load.py``: a short run against a server it starts, and its refusal of non-loopback URLs."""

import json

import pytest

from bench import load


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "http://127.3.2.1", "http://[::1]:9000/prefix/",
                                 "http://localhost:8000"])
def test_loopback_urls_are_accepted(url):
    target = load.loopback_target(url)
    assert target.host.startswith("127.") or target.host == "::1"


@pytest.mark.parametrize("url", ["http://example.com:8000", "http://10.0.0.1:8000", "http://0.0.0.0:8000",
                                 "http://[::2]:8000", "https://127.0.0.1:8000", "http://:8000"])
def test_other_hosts_are_refused(url, capsys):
    with pytest.raises(load.NotLoopback):
        load.loopback_target(url)
    assert load.main(["--url", url, "--duration", "1"]) == 2
    assert "refusing" in capsys.readouterr().err


def test_a_short_run_has_no_errors_and_prints_the_summary(tmp_path, capsys):
    # Bounded by count: 400 requests at 4 connections, over every kind of the mix.
    out = tmp_path / "load.json"
    status = load.main(["--duration", "20", "--connections", "4", "--max-requests", "400", "--pool", "40",
                        "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summary = [line for line in printed.splitlines() if line.startswith("load: ")]
    assert summary and "4 connections, 400 requests" in summary[-1] and " 0 errors" in summary[-1]
    figures = json.loads(out.read_text())
    assert figures["kinds"]["total"]["requests"] == 400
    assert figures["kinds"]["total"]["errors"] == 0
    assert all(figures["kinds"][kind]["ok"] > 0 for kind in load.KINDS)
    assert figures["memory"]["known"] and figures["memory"]["rss_at_end"] > 0
