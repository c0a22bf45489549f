"""Meta-commands without Jupyter: cell splitting, parsing, and each `%` command on a Session."""
from __future__ import annotations

import pytest

from accel_kernel.kernel import magics
from accel_kernel.kernel.magics import (MagicCall, MagicContext, MagicError, parse_magic,
                                        run_magic, split_cell)
from accel_kernel.lang.errors import AccelError
from accel_kernel.session import Session


@pytest.fixture
def ctx() -> MagicContext:
    return MagicContext(Session(target="interp"), cell_name="cell[1]")


def run(line: str, ctx: MagicContext) -> magics.MagicOutput:
    return run_magic(parse_magic(line), ctx)


# ---------------------------------------------------------------- parsing

def test_parse_magic():
    assert parse_magic("%target cpu") == MagicCall("target", "cpu")
    assert parse_magic("%who") == MagicCall("who", "")
    assert parse_magic("%time  1 + 2 ") == MagicCall("time", "1 + 2")
    assert parse_magic("%%python x = 1").cell


def test_split_cell_keeps_order_and_line_numbers():
    cell = "%target interp\nlet x = 1\nlet y = 2\n%who\nx + y\n"
    segments = split_cell(cell)
    kinds = [("magic", s.magic.name) if s.magic else ("code", s.line) for s in segments]
    assert kinds == [("magic", "target"), ("code", 2), ("magic", "who"), ("code", 5)]
    assert segments[1].code == "let x = 1\nlet y = 2"
    assert segments[3].padded_code() == "\n\n\n\nx + y\n"


def test_split_cell_only_magics_and_blank_code():
    assert [s.magic.name for s in split_cell("%who\n\n%help\n-- a comment\n")] == ["who", "help"]
    assert split_cell("") == []


def test_indented_percent_is_code_not_a_magic():
    # `%` in column 1 is a meta-command; an indented `%` continues an expression (remainder)
    segments = split_cell("let r = 7\n  % 2")
    assert len(segments) == 1 and segments[0].code == "let r = 7\n  % 2"


def test_cell_magic_takes_the_whole_cell():
    (segment,) = split_cell("%%python\nx = 1\n%who")
    assert segment.magic.cell and segment.magic.name == "python"
    assert segment.magic.body == "x = 1\n%who"


def test_strip_magics_keeps_lines():
    assert magics.strip_magics("%who\nlet x = (1 +") == "\nlet x = (1 +"


# ---------------------------------------------------------------- behaviour

def test_who_lists_user_globals(ctx):
    out = run("%who", ctx)
    assert out.displays[0]["text/plain"] == "no user globals"
    ctx.session.execute("def sq x = x * x\nlet xs = [1, 2, 3]")
    (bundle,) = run("%who", ctx).displays
    text = bundle["text/plain"]
    assert text.splitlines()[0].split() == ["name", "kind", "type"]
    assert "sq" in text and "def" in text and "xs" in text and "[]i64" in text
    assert "<table>" in bundle["text/html"] and "sum" not in text   # prelude is not listed


def test_reset_forgets_user_globals(ctx):
    ctx.session.execute("let a = 1\nlet b = 2")
    out = run("%reset", ctx)
    assert out.stdout == ["forgot 2 user globals\n"]
    assert ctx.session.names() == []
    assert ctx.session.lookup("sum") is not None      # the prelude stays


def test_help_lists_every_magic(ctx):
    (text,) = run("%help", ctx).stdout
    for name in ["%who", "%reset", "%help", "%target", "%time", "%stages", "%%python"]:
        assert name in text
    assert "accel" in text
    assert "cells run on the target cpu by default" in text


def test_target_without_a_name_shows_the_current_one_and_every_target(ctx):
    (text,) = run("%target", ctx).stdout
    lines = text.splitlines()
    assert lines[0] == "target: interp"
    assert [line.split()[1] for line in lines if line.startswith(" * ")] == ["interp"]
    for name in ("interp", "numpy", "cpu", "cuda"):
        assert any(line[3:].startswith(name) for line in lines[1:]), name
    assert any("cpu" in line and "(default)" in line for line in lines)
    assert not any("not built yet" in line for line in lines)       # every target is built
    fresh = MagicContext(Session(), cell_name="cell[1]")
    assert run("%target", fresh).stdout[0].startswith("target: cpu\n")


def test_target_show_and_set(ctx):
    assert run("%target", ctx).stdout[0].startswith("target: interp\n")
    assert run("%target interp", ctx).stdout == ["target: interp\n"]
    assert run("%target numpy", ctx).stdout == ["target: numpy\n"]
    assert ctx.session.target == "numpy"
    run("%target interp", ctx)
    from accel_kernel.backends.cuda import device
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(device, "unavailable", lambda: device.NO_GPU)
        with pytest.raises(NotImplementedError, match="no NVIDIA GPU found"):
            run("%target cuda", ctx)
    assert ctx.session.target == "interp"
    with pytest.raises(MagicError, match="unknown target"):
        run("%target tpu", ctx)
    with pytest.raises(MagicError):
        run("%target interp cpu", ctx)


def test_time_shows_value_and_timings(ctx):
    out = run("%time reduce (+) 0 [1..10]", ctx)
    assert out.stdout[0] == "55\n"
    assert out.stdout[1].startswith("time: check ") and "run " in out.stdout[1]


def test_time_lets_accel_errors_through(ctx):
    with pytest.raises(AccelError) as info:
        run("%time [1, 2][5]", ctx)
    assert info.value.kind == "IndexError"
    assert "cell[1]" in info.value.headline()
    with pytest.raises(MagicError, match="needs an expression"):
        run("%time", ctx)


@pytest.mark.parametrize("line", ["%who -h", "%reset --help", "%target -h", "%time -h",
                                  "%stages -h", "%%python -h"])
def test_help_flag_prints_usage(line, ctx):
    ctx.session.execute("let keep = 1")
    (text,) = run(line, ctx).stdout
    assert text.startswith(line.split()[0])
    assert ctx.session.lookup("keep") is not None      # `%reset -h` did not reset


def test_unknown_magic_lists_known_ones(ctx):
    with pytest.raises(MagicError) as info:
        run("%nope", ctx)
    assert "unknown meta-command %nope" in info.value.message
    assert "%who" in info.value.message and "%target" in info.value.message
    with pytest.raises(MagicError):
        run("%%who", ctx)                       # not a cell magic
    with pytest.raises(MagicError):
        run("%python", ctx)                     # only a cell magic


def test_help_lists_every_meta_command_that_works(ctx):
    assert run("%dashboard", ctx).stdout == []      # the kernel shows it (test_dashboard_kernel)
    (text,) = run("%help", ctx).stdout
    assert "%dashboard" in text and "%dashboard" in magics.magic_names()
    for line in text.splitlines():                   # every listed meta-command answers
        if line.startswith("  %"):
            name = line.split()[0]
            call = parse_magic(name)
            assert magics.check_magic(call) is magics.MAGICS[call.name]


def test_budget_sets_shows_and_removes_the_device_budget(ctx):
    text = run("%budget", ctx).stdout[0]
    assert text.startswith("budget: off\n") and "device memory of the `cuda` target" in text
    assert "no device memory used yet" in text
    assert run("%budget 512MB", ctx).stdout[0].startswith("budget: 488.3 MiB (512000000 bytes)")
    assert ctx.session.budget == 512_000_000
    run("%budget 1.5GiB", ctx)
    assert ctx.session.budget == 1_610_612_736
    assert run("%budget", ctx).stdout[0].startswith("budget: 1.5 GiB")
    run("%budget off", ctx)
    assert ctx.session.budget is None
    for bad in ["%budget x", "%budget 2 GB more", "%budget -5", "%budget 3XB"]:
        with pytest.raises(MagicError, match="cannot read .* as a size: 512MB"):
            run(bad, ctx)
    assert ctx.session.budget is None
    assert "powers of 1000" in run("%budget -h", ctx).stdout[0]


def test_budget_shows_the_use_of_each_device_pool(ctx):
    from accel_kernel.runtime.budget import DevicePool
    from tests.runtime.test_budget import FakeDevice
    pool = DevicePool(FakeDevice(), ctx.session.events, "fake:0", ctx.session.budget)
    ctx.session.memory.devices["fake:0"] = pool
    kept = [pool.alloc(10, "i8") for _ in range(3)]
    run("%budget 200", ctx)                 # a smaller budget evicts at once
    text = run("%budget", ctx).stdout[0]
    assert "fake:0: in use 160 B of budget 200 B (peak 240 B), 3 live buffers (1 evicted)" in text
    assert len(kept) == 3


def test_time_counts_the_runtime_events_of_its_run(ctx):
    from accel_kernel.runtime.events import Alloc
    execute = ctx.session.execute

    def with_an_event(code, name):
        ctx.session.events.emit(Alloc("fake:0", 1, 1024, 1024))
        return execute(code, name)
    ctx.session.execute = with_an_event
    out = run("%time 1 + 2", ctx).stdout
    assert out[-1] == "runtime: 1 alloc (1.0 KiB)\n"


def test_magic_arguments_are_checked(ctx):
    with pytest.raises(MagicError, match="takes no arguments"):
        run("%who xs", ctx)


def test_magic_names():
    names = magics.magic_names()
    assert "%who" in names and "%%python" in names and len(names) == len(set(names))
