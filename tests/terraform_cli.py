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
import os
import re
import shutil
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
    """A provider's environment, fixed at its start: the tests' AWS settings come from a stack's override only."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "TF_REATTACH"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    # In debug mode it logs at trace level (a line for each call and request) unless told: the errors and warnings a
    # failed command shows are all that is read. The deploy rehearsal's module here: 211 -> 197-201 CPU-s.
    env.update(dict.fromkeys(("TF_LOG", "TF_LOG_PROVIDER", "TF_LOG_SDK", "TF_LOG_SDK_PROTO"), "WARN"))
    return env


class _Provider:
    """One running provider in debug mode, started in ``folder``, and the value of TF_REATTACH_PROVIDERS that
    reaches it. Its output goes to a log, whose errors a failed command's output ends with."""

    def __init__(self, folder: Path | None) -> None:
        (binary,) = PROVIDER.glob("*/terraform-provider-aws_*")
        self.folder = folder
        self.log = tempfile.NamedTemporaryFile(prefix="terraform-provider-", suffix=".log")
        # setpriv: killed when the thread that started it ends (the starter's, which lives as long as the process)
        self.process = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", str(binary), "-debug"], cwd=folder,
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=provider_env())
        deadline = time.monotonic() + 120
        while not (found := REATTACH.search(self.output())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the AWS provider did not start:\n{self.output()[-3000:]}")
            time.sleep(0.1)
        self.reattach = found.group(1)

    def output(self, since: int = 0) -> str:
        return Path(self.log.name).read_bytes()[since:].decode(errors="replace")

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
# the providers' parent thread, alive as long as the process
_starter = ThreadPoolExecutor(1)


@contextlib.contextmanager
def _provider(folder: Path | None):
    """An idle provider that suits ``folder`` (None: any), or a new one; it goes back to the idle ones only when the
    command returned (a command that timed out may have left it working)."""
    with _lock:
        fits = [p for p in _idle if folder is None or p.folder == folder]
        provider = fits[-1] if fits else None
        if provider:
            _idle.remove(provider)
    if provider is not None and provider.process.poll() is not None:
        provider.stop()
        provider = None
    provider = provider or _starter.submit(_Provider, folder).result()
    try:
        yield provider
    except BaseException:
        provider.stop()
        raise
    with _lock:
        _idle.append(provider)
        retired = _idle[:-KEEP_IDLE]
        del _idle[:-KEEP_IDLE]
    for old in retired:
        old.stop()


def run_terraform(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """``terraform *args`` in ``cwd``, its output captured; every command but init on a reattached provider, whose
    output meanwhile ends the stderr of a command that did not exit 0."""
    env = {key: value for key, value in os.environ.items() if key != "TF_REATTACH_PROVIDERS"}
    env["TF_IN_AUTOMATION"] = "1"
    if args[0] == "init":
        return subprocess.run([terraform(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    with _provider(None if args[0] in ANYWHERE else Path(cwd).resolve()) as provider:
        logged = Path(provider.log.name).stat().st_size
        done = subprocess.run([terraform(), *args], cwd=cwd, env=dict(env, TF_REATTACH_PROVIDERS=provider.reattach),
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            # its errors, warnings and any plain line (a panic's) are the ones to read
            lines = [line for line in provider.output(logged).splitlines()
                     if not line.startswith("{") or '"@level":"error"' in line or '"@level":"warn"' in line]
            done.stderr += "\n--- the provider's output meanwhile:\n" + "\n".join(lines)[-3000:]
        return done
