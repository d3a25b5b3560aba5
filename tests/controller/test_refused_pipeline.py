"""A switch that refuses the pipeline is one fault line, not finsy's cancellation.

finsy cancels its tasks when the pipeline step fails, so its setup ends in
``CancelledError``; the controller turns that into a :class:`SwitchFault`
naming the switch and the stage.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from p4mcc.controller import fleet
from p4mcc.controller.errors import SwitchFault
from p4mcc.controller.pipeline import builtin_pipeline
from p4mcc.p4switch.p4rt.device import Device
from p4mcc.p4switch.p4rt.errors import Code, P4RTError
from p4mcc.p4switch.p4rt.server import serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "p4switch_p4rt"))
from p4rt_fakes import fake_builder  # noqa: E402


@pytest.fixture
def refusing_switch():
    dev = Device(0, fake_builder(cpu_port=64), cpu_port=64)

    def refuse(action, cfg):
        raise P4RTError(Code.INVALID_ARGUMENT, "this switch refuses every pipeline")

    dev.set_pipeline = refuse
    server, servicer, port = serve(dev, "127.0.0.1:0")
    yield f"127.0.0.1:{port}"
    servicer.close()
    server.stop(0).wait()


def test_a_refused_pipeline_is_a_switch_fault_at_the_pipeline_stage(refusing_switch) -> None:
    fleet.quiet_finsy()
    target = fleet.Target("s1", refusing_switch, 0)

    async def go() -> None:
        await fleet.open_switch(target, builtin_pipeline(), election_id=1, retry_for=1)

    with pytest.raises(SwitchFault) as ei:
        asyncio.run(go())
    assert str(ei.value).startswith("s1: pipeline: the switch ended the session")


def test_cancelling_the_caller_still_cancels(refusing_switch) -> None:
    target = fleet.Target("s1", refusing_switch, 0)

    async def go() -> None:
        task = asyncio.create_task(fleet.open_switch(target, builtin_pipeline(), election_id=1, retry_for=1))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
