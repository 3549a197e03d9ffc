"""A single-node Slurm cluster on localhost for the tests: munged, slurmctld and slurmd from the
distribution's packages (Debian `slurm-wlm`, `munge`), every file under one temporary folder.

The node `pk1` (NodeHostname=localhost) declares 4 CPUs whatever the machine has
(`SlurmdParameters=config_overrides`), so a 4-task array runs at once on a 2-core runner. No
cgroups (proctrack/linuxproc, task/none), no accounting database: job states come from
`scontrol show job` (kept for `MinJobAge` seconds after a job ends).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo")

_CONF = """\
ClusterName=pathkit-test
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=5
NodeName=pk1 NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def why_not() -> str | None:
    """Why no cluster can be started here (None when it can)."""
    if os.geteuid() != 0:
        return "the Slurm cluster runs its daemons as root (this is not root)"
    missing = [name for name in DAEMONS + CLIENTS if shutil.which(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Debian: apt-get install slurm-wlm munge)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The daemons' processes and the environment (`SLURM_CONF`) the client commands need."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.procs: list[subprocess.Popen] = []

    def start(self, timeout: float = 60.0) -> None:
        r = self.root
        for sub in ("state", "spool", "log"):
            (r / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(r, 0o700)  # munged refuses a key or socket folder others can write to
        key = r / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.conf.write_text(_CONF.format(root=r, ctld_port=_free_port(), slurmd_port=_free_port()))
        self._spawn(["munged", "-F", "-f", f"--socket={r}/munge.socket", f"--key-file={key}",
                     f"--log-file={r}/log/munged.log", f"--pid-file={r}/munged.pid", f"--seed-file={r}/munged.seed"],
                    r / "munge.socket")
        self._spawn(["slurmctld", "-D", "-i"], None)
        self._spawn(["slurmd", "-D", "-N", "pk1"], None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.run("sinfo", "-h", "-n", "pk1", "-o", "%T", check=False).stdout.strip()
            if state.startswith("idle"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"the node never came up (sinfo: {state!r}); logs: {self.log_tail()}")

    def _spawn(self, cmd: list[str], wait_for: Path | None) -> None:
        log = (self.root / "log" / f"{cmd[0]}.out").open("ab")
        self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + 20
        while wait_for is not None and not wait_for.exists():
            if self.procs[-1].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{cmd[0]} did not start: {self.log_tail()}")
            time.sleep(0.1)

    def log_tail(self, lines: int = 5) -> str:
        out = []
        for log in sorted((self.root / "log").glob("*")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"{log.name}: " + " | ".join(tail))
        return "; ".join(out)

    def stop(self) -> None:
        with_jobs = self.run("squeue", "-h", "-o", "%A", check=False).stdout.split()
        if with_jobs:
            self.run("scancel", *sorted(set(with_jobs)), check=False)
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    # ------------------------------------------------------------------ clients

    def run(self, *cmd: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env={**self.env, **(env or {})}, capture_output=True, text=True, check=check,
                              timeout=60)

    def sbatch(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Submit; returns the job id (`--parsable`)."""
        return self.run("sbatch", "--parsable", *args, env=env).stdout.strip().split(";")[0]

    def states(self, job: str) -> dict[str, str]:
        """Array task id (or job id) -> JobState, from `scontrol show job` (ended jobs included)."""
        text = self.run("scontrol", "-o", "show", "job", job, check=False).stdout
        out = {}
        for line in text.splitlines():
            task = re.search(r"\bArrayTaskId=(\S+)", line)
            state = re.search(r"\bJobState=(\S+)", line)
            if state:
                out[task.group(1) if task else job] = state.group(1)
        return out

    def wait(self, job: str, timeout: float = 300.0) -> dict[str, str]:
        """Until no task of `job` is pending or running; their final states."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.states(job)
            if states and not any(s in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED")
                                  for s in states.values()):
                return states
            time.sleep(0.5)
        raise TimeoutError(f"job {job} still running after {timeout} s: {self.states(job)}")
