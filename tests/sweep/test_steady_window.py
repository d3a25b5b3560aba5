"""The steady-state window results report beside the whole-run mean."""

from __future__ import annotations

from dataclasses import replace

import pytest

from p4mcc.reporting import results as R
from p4mcc.scenario.model import (
    ScenarioError, Session, parse_steady_window, scenario_from_dict,
)

DOC = {
    "duration": 10,
    "topology": {"hosts": ["a", "b", "c", "d"], "switches": ["s"],
                 "links": [["a", "s"], ["b", "s"], ["c", "s"], ["d", "s"]]},
    "sessions": [{"name": "m", "protocol": "tfmcc", "sender": "a", "receivers": ["b"]}],
    "tcp_flows": [{"name": "t", "src": "c", "dst": "d"}],
}


def samples() -> list[R.Sample]:
    """A session that starts slowly (1 Mb/s until 5 s, then 4) against TCP at 4 Mb/s."""
    out = []
    for i in range(1, 21):
        t = i * 0.5
        out.append(R.Sample(t, "session", "m", "b", R.THROUGHPUT, 1e6 if t <= 5 else 4e6))
        out.append(R.Sample(t, "tcp", "t", "d", R.THROUGHPUT, 4e6))
    return out


def test_default_window_is_the_second_half_and_reports_the_steady_ratio() -> None:
    sc = scenario_from_dict(DOC, known_protocols=None)
    assert sc.steady_bounds() == (5.0, 10.0)
    s = R.summarize(samples(), sc, "netsim")
    assert s["steady_window_s"] == [5.0, 10.0]
    m = s["sessions"]["m"]
    assert m["tcp_friendliness"] == pytest.approx(2.5 / 4)
    assert m["steady_tcp_friendliness"] == 1.0
    assert m["receivers"]["b"]["steady_throughput_bps"] == 4e6
    assert m["steady_jain_with_tcp"] == 1.0
    assert s["tcp_flows"]["t"]["steady_throughput_bps"] == 4e6


def test_window_from_the_file_and_from_the_command_line() -> None:
    sc = scenario_from_dict({**DOC, "steady_window": ["2s", "4s"]}, known_protocols=None)
    assert sc.steady_bounds() == (2.0, 4.0)
    assert R.summarize(samples(), sc, "netsim")["sessions"]["m"]["steady_tcp_friendliness"] == 0.25
    sc = scenario_from_dict({**DOC, "steady_window": "80%"}, known_protocols=None)
    assert sc.steady_bounds() == (8.0, 10.0)
    assert sc.with_overrides(steady_window=parse_steady_window("1:3")).steady_bounds() == (1.0, 3.0)
    assert parse_steady_window("0.25") == 0.25


@pytest.mark.parametrize("bad", [1.5, "3:1", [1, 2, 3], "x"])
def test_bad_windows_name_the_field(bad: object) -> None:
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict({**DOC, "steady_window": bad}, known_protocols=None)
    assert e.value.problems[0].startswith("steady_window: ")


def test_the_printed_table_shows_both_windows() -> None:
    from rich.console import Console

    sc = scenario_from_dict(DOC, known_protocols=None)
    console = Console(width=200, record=True)
    console.print(R.summary_table(R.summarize(samples(), sc, "netsim")))
    text = console.export_text()
    assert "ss Mb/s" in text and "ss TCP-fr" in text and "(5-10 s)" in text
    row = next(line for line in text.splitlines() if "(mean)" in line)
    assert "2.500" in row and "4.000" in row and "0.62" in row and "1.00" in row


def test_session_dataclass_unchanged_by_window() -> None:
    sc = scenario_from_dict(DOC, known_protocols=None)
    assert isinstance(sc.sessions[0], Session)
    assert replace(sc, steady_window=(0.0, 1.0)).steady_bounds() == (0.0, 1.0)


def test_a_table_printed_to_a_pipe_keeps_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """Off a terminal Rich sized tables to 80 columns and cut the figures
    ("2.8…"); the CLI's console is wide enough for the run summary."""
    from p4mcc.reporting.console import table_console

    doc = {**DOC, "sessions": [{**DOC["sessions"][0], "name": "tfmcc-session"}],
           "tcp_flows": [{**DOC["tcp_flows"][0], "name": "tcp-competitor"}]}
    sc = scenario_from_dict(doc, known_protocols=None)
    named = [replace(s, flow="tfmcc-session" if s.kind == "session" else "tcp-competitor") for s in samples()]
    console = table_console()
    assert not console.is_terminal
    console.print(R.summary_table(R.summarize(named, sc, "netsim")))
    out = capsys.readouterr().out
    assert "…" not in out
    assert "tfmcc-session" in out and "tcp-competitor" in out and "2.500" in out and "0.62" in out
