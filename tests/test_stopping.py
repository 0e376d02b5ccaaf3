"""How `deblur` stops on SIGTERM and Ctrl-C (`deblur.cli.stopping`), each in a process of its own: a stop inside
an import or JAX's compiling waits for it, a stop Python swallowed is sent again, a stop after the exit handlers is
ignored."""

import subprocess
import sys
import textwrap

import pytest


def run_script(body: str, tmp_path) -> subprocess.CompletedProcess:
    script = "import atexit, gc, os, signal, sys, time\nfrom deblur.cli import stop_cleanly\n"
    # Ctrl-C as in a terminal, also where the tests run with SIGINT ignored (a background job)
    script += "signal.signal(signal.SIGINT, signal.default_int_handler)\nstop_cleanly()\n"
    return subprocess.run(
        [sys.executable, "-c", script + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_stop_inside_an_import_waits_for_the_import(tmp_path):
    # Raised inside TensorFlow's import, a stop crashed the process as it exited (Segmentation fault).
    (tmp_path / "slow_library.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "end = time.monotonic() + 0.3\n"
        "while time.monotonic() < end:\n"
        "    pass\n"
        "SET_UP = True\n"
    )
    ended = run_script(
        """
        sys.path.insert(0, ".")
        try:
            import slow_library
            end = time.monotonic() + 5
            while time.monotonic() < end:
                time.sleep(0.01)
            print("not stopped")
        except KeyboardInterrupt:
            print("stopped", "after the import" if "slow_library" in sys.modules else "inside the import")
        """,
        tmp_path,
    )
    assert ended.stdout == "stopped after the import\n", ended.stdout + ended.stderr


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_stop_inside_jaxs_compiling_waits_for_it(tmp_path, stop):
    # Raised inside JAX's compiling, a stop left the compilation running on XLA's threads: it crashed the process as
    # it exited (Segmentation fault). Here a function whose code is one of JAX's files stands for the compiler.
    ended = run_script(
        """
        compiler = os.path.join("site-packages", "jax", "_src", "compiler.py")
        exec(compile(
            "def compile_step(state):\\n"
            "    os.kill(os.getpid(), signal.STOP)\\n"
            "    end = time.monotonic() + 0.3\\n"
            "    while time.monotonic() < end:\\n"
            "        pass\\n"
            "    state.append('compiled')\\n",
            compiler,
            "exec",
        ))
        state = []
        try:
            compile_step(state)
            end = time.monotonic() + 5
            while time.monotonic() < end:
                time.sleep(0.01)
            print("not stopped")
        except KeyboardInterrupt:
            print("stopped", "after the compile" if state else "inside the compile")
        """.replace("STOP", stop),
        tmp_path,
    )
    assert ended.stdout == "stopped after the compile\n", ended.stdout + ended.stderr
    # said once, while it waits (silent, the stop looked ignored)
    assert ended.stderr == "stopping once JAX has finished compiling ...\n", ended.stderr


def test_a_stop_raised_where_python_ignores_exceptions_is_sent_again(tmp_path):
    # JAX's garbage-collection callback met a stop, Python printed "Exception ignored" and the run went on to its end.
    ended = run_script(
        """
        def callback(phase, info):
            if phase == "start" and not callback.sent:
                callback.sent = True
                os.kill(os.getpid(), signal.SIGTERM)
                end = time.monotonic() + 0.3
                while time.monotonic() < end:  # the handler runs here, inside the callback
                    pass
        callback.sent = False
        gc.callbacks.append(callback)
        try:
            gc.collect()
            end = time.monotonic() + 5
            while time.monotonic() < end:
                time.sleep(0.01)
            print("not stopped")
        except KeyboardInterrupt:
            print("stopped")
        """,
        tmp_path,
    )
    assert (ended.stdout, ended.stderr) == ("stopped\n", ""), ended.stdout + ended.stderr


def test_a_stop_after_the_run_has_ended_does_not_end_it_as_killed(tmp_path):
    # At exit, after the exit handlers, native libraries tear down (1.4 s for TensorFlow and OpenVINO) with
    # SIGTERM's default put back by Python: a stop there ended a finished run with exit 143.
    ended = run_script(
        """
        atexit._run_exitfuncs()  # as Python runs them at exit, before the native teardown
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        print("torn down")
        """,
        tmp_path,
    )
    assert (ended.returncode, ended.stdout) == (0, "torn down\n"), ended.stderr
