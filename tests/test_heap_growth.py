"""bench/heap_growth.py reads heaptrack's data format: the heap each backtrace gained between two
moments, whenever the freed blocks were allocated. A small file in that format, written here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import heap_growth

# Two backtraces: one through PyUnicode_New (under an interpreter frame) holds more and more 4 kB
# blocks, one through sqlite3Malloc allocates and frees 64 B blocks. One 4 kB block existed
# before the window (1 s to 3 s) and is freed in it. Times (`c`) are milliseconds, in hex.
DATA = """v 10400 3
X python -m bot run
s 2b /lib/libpython3.11.so.1.0
s 10 PyUnicode_New
s 20 _PyEval_EvalFrameDefault
s 12 sqlite3Malloc
s 12 /lib/libsqlite3.so.0
i 1000 1 2
i 2000 1 3
i 3000 5 4
t 1 0
t 2 1
t 3 0
a 1000 2
a 40 3
c 0
+ 0
c 3e8
+ 1
- 1
c 7d0
- 0
+ 0
+ 0
+ 0
+ 1
c bb8
+ 0
c 7530
"""


@pytest.fixture
def data(tmp_path: Path) -> str:
    path = tmp_path / "heaptrack.python.1.txt"
    path.write_text(DATA)
    return str(path)


def test_the_window_counts_allocations_minus_frees_per_backtrace(data: str) -> None:
    trace, net, series = heap_growth.read(data, since=1.0, until=3.0, min_size=3000)
    assert net[0] == 2  # three new 4 kB blocks, one freed that was allocated before the window
    assert net[1] == 1  # one 64 B block allocated and freed, one still held
    assert trace.stack(2, 5) == ["PyUnicode_New [libpython3.11.so.1.0]"]  # interpreter hidden
    assert trace.stack(3, 5) == ["sqlite3Malloc [libsqlite3.so.0]"]
    # the heap as the clock reaches 0 s and 30 s: four 4 kB blocks and a 64 B one by then
    assert series == [(0, 0, 0, 0), (30, 4 * 4096 + 64, 4 * 4096, 4)]


def test_the_report_names_the_backtrace_that_grew(
    data: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert heap_growth.main([data, "--since", "1", "--until", "3"]) == 0
    out = capsys.readouterr().out
    assert "heap gained from 1 s to 3 s: +8.3 kB" in out  # 2 × 4,096 + 64 bytes
    first = out.split("\n\n")[1]
    assert first.startswith("+8.2 kB in +2 blocks") and "PyUnicode_New" in first


def test_the_series_reports_the_heap_every_30_seconds(
    data: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert heap_growth.main([data, "--series", "--min-size", "100"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split() for row in rows[1:]] == [
        ["0", "0.0", "0.0", "0"],
        ["30", "16.4", "16.4", "4"],
    ]
