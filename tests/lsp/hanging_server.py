"""A language server that answers initialize and then ignores everything, SIGTERM included.

Used to check that closing a session kills a server that will not shut down. It also starts a child
process that ignores SIGTERM, to check that the whole process group goes.
"""

import json
import signal
import subprocess
import sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                          "signal.SIG_IGN); time.sleep(3600)"])
print(f"child {child.pid}", file=sys.stderr, flush=True)


def read_message() -> dict[str, object] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.startswith(b"Content-Length:"):
            length = int(line.split(b":")[1])
        if line in (b"\r\n", b"\n"):
            break
    return json.loads(sys.stdin.buffer.read(length))  # type: ignore[no-any-return]


while True:
    msg = read_message()
    if msg is None:
        signal.pause()  # stdin closed: still refuse to go
    if msg is not None and msg.get("method") == "initialize":
        result = {"capabilities": {"hoverProvider": True}}
        body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        sys.stdout.buffer.write(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
        sys.stdout.buffer.flush()
