import errno
import os

import tensorflow as tf

from deblur.errors import error_reason, full_disk_message

GRAPH_ERROR = (
    "Graph execution error:\n\nDetected at node StatefulPartitionedCall defined at (most recent call last):\n"
    '  File "x.py", line 13, in <module>\n\n  File "step.py", line 31, in train_step\n\n'
    "Trying to access resource head_conv/kernel located in device CPU:1 from device CPU:0\n"
    " Cf. https://www.tensorflow.org/xla/known_issues\n\t [[{{node StatefulPartitionedCall}}]]"
)


def test_the_informative_line_not_the_traceback():
    err = tf.errors.InvalidArgumentError(None, None, GRAPH_ERROR)
    assert error_reason(err) == "Trying to access resource head_conv/kernel located in device CPU:1 from device CPU:0"


def test_a_lost_worker_is_named():
    err = tf.errors.UnavailableError(None, None, "Graph execution error:\nfoo\nTask worker/1 is unhealthy: gone")
    assert error_reason(err) == "Task worker/1 is unhealthy: gone"


def test_long_lines_are_cut():
    assert len(error_reason(tf.errors.UnknownError(None, None, "x" * 500))) == 200


def test_a_full_disk_is_one_line_naming_the_file_and_other_os_errors_are_not():
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out/photo.png")
    assert full_disk_message(full) == (
        f"out/photo.png: {os.strerror(errno.ENOSPC)}: free some space, then run the same command again (what was "
        "finished is kept)"
    )
    assert full_disk_message(OSError(errno.ENOSPC, "No space left on device")).startswith("No space left on device:")
    assert full_disk_message(OSError(errno.EIO, "Input/output error", "out/photo.png")) is None
    assert full_disk_message(OSError("cannot write mode RGBA as JPEG")) is None  # Pillow's: a bug, no errno
