#!/usr/bin/env python3
"""Drives `mkc chat` through a pseudo-terminal, as a person would: prints one
JSON object with each turn's answer text and stats line, and whether Ctrl-C
stopped an answer without ending the chat. Used by tests/test_chat.sh.

usage: chat_pty.py MKC MODEL SYSTEM MSG1 MSG2 LONG_MSG MSG4
"""
import json
import os
import pty
import re
import select
import sys
import time

mkc, model, system, msg1, msg2, long_msg, msg4 = sys.argv[1:8]
argv = [mkc, "chat", "-m", model, "-sys", system, "--verbose", "--draft-max", "4", "--ctx", "512"]
pid, fd = pty.fork()
if pid == 0:
    os.execv(mkc, argv)

buf = b""


def read_until(pattern, timeout=300):
    """Reads until pattern (bytes regex) matches what came since `start`."""
    global buf
    end = time.time() + timeout
    while not re.search(pattern, buf):
        left = end - time.time()
        if left <= 0:
            raise TimeoutError(f"waiting for {pattern!r}; got {buf[-400:]!r}")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                raise EOFError(f"chat ended waiting for {pattern!r}; got {buf[-400:]!r}")
            buf += chunk


def turn(msg, interrupt_after=None):
    """Sends msg, returns (answer text, stats line)."""
    global buf
    buf = b""
    os.write(fd, msg.encode() + b"\r")
    if interrupt_after is not None:
        # Wait until the answer has started streaming, then Ctrl-C.
        read_until(re.escape(msg.encode()) + rb"\r\n.{%d}" % interrupt_after)
        os.write(fd, b"\x03")
    read_until(rb"mkc: turn \d+:[^\n]*\n(.|\n)*> $")
    text = buf.decode("utf-8", "replace").replace("\r\n", "\n")
    echo = text.index(msg) + len(msg) + 1
    stats = re.search(r"mkc: turn \d+:[^\n]*", text)
    return text[echo:stats.start()], stats.group(0)


out = {}
try:
    read_until(rb"> $")
    out["turns"] = [turn(msg1), turn(msg2), turn(long_msg, interrupt_after=20), turn(msg4)]
    buf = b""
    os.write(fd, b"/exit\r")
    _, status = os.waitpid(pid, 0)
    out["exit"] = os.waitstatus_to_exitcode(status)
except Exception as e:  # the test reports it
    out["error"] = str(e)
    os.kill(pid, 9)
print(json.dumps(out))
