"""A restarted switch takes the controller's program from the pipeline cache (p4switch/pipecache.py)."""

from __future__ import annotations

from finsy.proto import p4r


def test_a_second_switch_process_loads_the_compiled_pipeline(tmp_path, monkeypatch):
    from p4mcc.controller.pipeline import builtin_pipeline
    from p4mcc.p4switch import switchd
    from p4mcc.p4switch.pipecache import PipelineCache
    from p4mcc.p4switch.switchd import make_builder, new_switch

    blob = builtin_pipeline().device_config
    config = p4r.ForwardingPipelineConfig(p4_device_config=blob)
    first = PipelineCache(tmp_path)
    sw1, prog1, info1 = make_builder(None, 510, cache=first, start_time=0.0)(config)
    assert first.hits == 0 and len(list(tmp_path.glob("*.pipeline.pickle"))) == 1

    # the restarted process: the cache is loaded with a spare instance, and the
    # push of the same config neither compiles nor lowers the program again
    compiled: list[bytes] = []
    monkeypatch.setattr(switchd, "compile_device_config", lambda b: compiled.append(b))
    again = PipelineCache(tmp_path)
    assert again.preload(lambda prog: new_switch(prog, 510, 0, 0.0)) == 1
    spare = again._spares[again.key(blob)]
    sw2, prog2, info2 = make_builder(None, 510, cache=again, start_time=0.0)(config)
    assert sw2 is spare and again.hits == 1 and not compiled
    assert info2.SerializeToString(deterministic=True) == info1.SerializeToString(deterministic=True)
    assert sw2.source == sw1.source
    # the spare is used once: the next push builds a fresh instance
    sw3, _, _ = make_builder(None, 510, cache=again, start_time=0.0)(config)
    assert sw3 is not sw2


def test_a_cache_of_another_front_end_version_or_a_bad_file_is_not_used(tmp_path):
    from p4mcc.p4switch.pipecache import SUFFIX, PipelineCache

    (tmp_path / f"{'0' * 32}{SUFFIX}").write_bytes(b"not a pickle")
    cache = PipelineCache(tmp_path)
    assert cache.preload(lambda prog: prog) == 0  # skipped, not fatal
    cache.program(b"config", lambda b: "compiled by this version")
    other = PipelineCache(tmp_path)
    other._fp = b"another front end"
    assert other.preload(lambda prog: prog) == 1
    assert other.program(b"config", lambda b: "compiled again") == (other.key(b"config"), "compiled again")


def _switch(*extra: str):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "p4mcc.cli.main", "switch", "--no-p4", "--standby",
                             "--grpc-server-addr", "127.0.0.1:0", *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_standby_switch_serves_only_when_told_to_go(tmp_path):
    p = _switch("--pipeline-cache", str(tmp_path))
    try:
        assert "standby, waiting for 'go'" in p.stdout.readline()
        p.stdin.write("go\n")
        p.stdin.close()
        assert "serving P4Runtime on 127.0.0.1:" in p.stdout.readline()
    finally:
        p.terminate()
        p.wait(30)
    # a standby whose runner went away (stdin closed) ends without serving
    q = _switch()
    assert "standby" in q.stdout.readline()
    q.stdin.close()
    assert q.wait(30) == 0 and "serving" not in q.stdout.read()
