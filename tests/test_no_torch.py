"""`import protocol` must not pull in torch: bots in thin environments speak it."""

import subprocess
import sys


def test_protocol_import_leaves_torch_out() -> None:
    code = "import sys, protocol, protocol.sockets; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
