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
                        "--no-kernel-wait", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summary = [line for line in printed.splitlines() if line.startswith("load: ")]
    assert summary and "4 connections, 400 requests" in summary[-1] and " 0 errors" in summary[-1]
    figures = json.loads(out.read_text())
    assert figures["kinds"]["total"]["requests"] == 400
    assert figures["kinds"]["total"]["errors"] == 0
    assert all(figures["kinds"][kind]["ok"] > 0 for kind in load.KINDS)
    assert figures["memory"]["known"] and figures["memory"]["rss_at_end"] > 0


def test_the_editors_mix_runs_without_errors_and_reports_every_figure(tmp_path, capsys):
    # Two editors for a few seconds on a small scene: the mode's machinery, not its numbers.
    out = tmp_path / "editors.json"
    status = load.main(["--mix", "editors", "--editors", "2", "--objects", "200", "--duration", "3",
                        "--no-kernel-wait", "--json", str(out)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    summary = [line for line in printed.splitlines() if line.startswith("editors: ")]
    assert summary and "2 editors" in summary[-1] and " 0 errors" in summary[-1]
    report = json.loads(out.read_text())
    assert report["mode"] == "editors" and report["editors"] == 2 and report["errors"] == 0
    assert report["scene"]["objects"] == 200
    for kind in ("hover", "move", "batch", "select"):
        row = report["kinds"][kind]
        assert row["errors"] == 0 and row["ok"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0, (kind, row)
    # 60 Hz each for about 3 s, less the ticks skipped while the previous one was unanswered.
    assert report["kinds"]["hover"]["ok"] + report["kinds"]["hover"]["skipped"] >= 2 * 60 * 2
    assert report["edits_per_s"] > 0
    # Each editor sees the other's moves.
    assert report["fan_out"]["samples"] > 0 and report["fan_out"]["p99_ms"] > 0
    assert report["memory"]["known"] and report["memory"]["rss_at_end"] > 0
    assert report["client_cpu_cores"] > 0 and report["server_cpu_cores"] > 0
    assert set(report["bars"]) == {"errors", "hover_p99_ms", "move_p99_ms", "rss_within_percent"}
    assert report["bars"]["errors"]["met"]


def test_the_editors_mix_refuses_more_editors_than_boxes(capsys):
    with pytest.raises(SystemExit):
        load.main(["--mix", "editors", "--editors", "8", "--objects", "4"])
    assert "--objects" in capsys.readouterr().err
