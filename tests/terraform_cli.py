"""terraform as the tests run it: offline from the provider mirror, with the mirror's AWS provider started once and
reattached by later commands (TF_REATTACH_PROVIDERS, terraform's documented way to use a provider that is already
running). Started by each command, the provider cost 2.4 CPU-s of the 6.1 of a validate here; the suite runs about
a hundred commands, and a plan or an apply starts it more than once.

A provider serves one command at a time: each command takes an idle one, or starts another. A reattached provider
reads files (an S3 object's source) from its own working folder, not terraform's: a command that may read them (plan,
apply, destroy) takes one started in its own folder; validate and providers schema take any. init does not start the
provider, and runs as usual: it still installs the provider from the mirror, so it proves the mirror holds the
version the stack requires."""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PLUGIN_DIR = Path(os.environ.get("TF_PLUGIN_DIR", "/opt/tf-plugins"))
PROVIDER = PLUGIN_DIR / "registry.terraform.io" / "hashicorp" / "aws" / "5.100.0"
REATTACH = re.compile(r"TF_REATTACH_PROVIDERS='(.+)'")


def terraform() -> str:
    path = shutil.which("terraform")
    # CI must fail, not skip, when the tool the tests rely on is missing.
    assert path, "terraform is not on PATH: install terraform 1.11.4"
    assert PROVIDER.is_dir(), f"{PLUGIN_DIR} lacks hashicorp/aws 5.100.0: terraform init cannot run offline"
    return path


def provider_env() -> dict[str, str]:
    """The environment of a provider talking to moto: its settings come from the stack's override only."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "TF_REATTACH"))}
    env.update(TF_IN_AUTOMATION="1", AWS_EC2_METADATA_DISABLED="true")
    return env


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no provider outlives its test process


class _Provider:
    """One running provider in debug mode, started in ``folder``, and the value of TF_REATTACH_PROVIDERS that
    reaches it."""

    def __init__(self, folder: Path | None) -> None:
        (binary,) = PROVIDER.glob("*/terraform-provider-aws_*")
        self.folder = folder
        self.log = tempfile.NamedTemporaryFile(prefix="terraform-provider-", suffix=".log")
        self.process = subprocess.Popen([str(binary), "-debug"], cwd=folder, stdin=subprocess.DEVNULL, stdout=self.log,
                                        stderr=subprocess.STDOUT, env=provider_env(), preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 120
        while not (found := REATTACH.search(Path(self.log.name).read_text(errors="replace"))):
            assert self.process.poll() is None and time.monotonic() < deadline, (
                f"the AWS provider did not start:\n{Path(self.log.name).read_text(errors='replace')[-3000:]}")
            time.sleep(0.1)
        self.reattach = found.group(1)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()


# commands that read no file through the provider: any idle provider serves them
ANYWHERE = ("validate", "providers")
# idle providers kept for later commands (about 300 MB each); the longest idle stops first
KEEP_IDLE = 3
_idle: list[_Provider] = []
_lock = threading.Lock()
# the providers' parent thread, alive as long as the process: a provider dies when the thread that started it ends
_starter = ThreadPoolExecutor(1)


@contextlib.contextmanager
def _provider(folder: Path | None):
    with _lock:
        fits = [p for p in _idle if folder is None or p.folder == folder]
        provider = fits[-1] if fits else None
        if provider:
            _idle.remove(provider)
    if provider is None or provider.process.poll() is not None:
        provider = _starter.submit(_Provider, folder).result()
    try:
        yield provider
    finally:
        with _lock:
            _idle.append(provider)
            retired = _idle[:-KEEP_IDLE]
            del _idle[:-KEEP_IDLE]
        for old in retired:
            old.stop()


def run_terraform(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """``terraform *args`` in ``cwd``, its output captured; every command but init on a reattached provider."""
    env = {key: value for key, value in os.environ.items() if key != "TF_REATTACH_PROVIDERS"}
    if args[0] == "init":
        return subprocess.run([terraform(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    with _provider(None if args[0] in ANYWHERE else Path(cwd).resolve()) as provider:
        return subprocess.run([terraform(), *args], cwd=cwd, env=dict(env, TF_REATTACH_PROVIDERS=provider.reattach),
                              capture_output=True, text=True, timeout=timeout)
