"""A real single-node Slurm cluster for the Slurm executor's tests, started and stopped here.

As real clusters run it: munge for authentication (a key made for the test), slurmctld and
slurmd, and, with accounting, slurmdbd over a MariaDB server of its own (so that `sacct`
reports finished array tasks). Every daemon listens on a free port of 127.0.0.1 and keeps its
files under one directory; the clients find the cluster through SLURM_CONF (`env()`). The
node declares the machine's real resources (`slurmd -C`); the controller forgets an ended job
after 2 s (MinJobAge; 300 by default), so the executor must read a task's end as it happens,
as it must on a busy cluster without accounting. Debian's slurm-wlm, slurmdbd, munge and
mariadb-server (scripts/install-deps) provide the programs.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready, limit_s: float, logs: list[Path]) -> None:
    deadline = time.monotonic() + limit_s
    while not ready():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p}:\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists())
            raise RuntimeError(f"{what} did not start within {limit_s:g} s\n{tails}")
        time.sleep(0.1)


def _node_resources() -> str:
    """The node's line as slurmd itself sees the machine (`slurmd -C`: CPUs, sockets, cores,
    threads, memory), without its name: a node declared with more than it has is drained."""
    line = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    return " ".join(w for w in line.split() if not w.startswith("NodeName="))


class LocalSlurm:
    """`with LocalSlurm(directory, accounting=True) as cluster:` a running cluster; its daemons
    are stopped (and waited for) on exit, whatever happened."""

    def __init__(self, directory: Path, accounting: bool = True, max_array_size: int = 1001,
                 partition: str = "test"):
        self.dir = Path(directory)
        self.accounting = accounting
        self.max_array_size = max_array_size
        self.partition = partition
        self.node = socket.gethostname()
        self.conf = self.dir / "etc" / "slurm.conf"
        self.daemons: list[tuple[str, subprocess.Popen]] = []

    def env(self) -> dict:
        """The environment a Slurm client (sbatch, squeue, sacct, scontrol) needs for this cluster."""
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
        return p

    # ---- start and stop ---------------------------------------------------------------------
    def __enter__(self) -> "LocalSlurm":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, argv: list[str], log: Path) -> subprocess.Popen:
        out = open(log, "ab")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env(), start_new_session=True)
        out.close()
        self.daemons.append((name, p))
        return p

    def _start(self) -> None:
        for sub in ("etc", "log", "run", "munge", "ctld", "slurmd", "mysql"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._start_munge()
        if self.accounting:
            self._start_mariadb()
            self._start_slurmdbd()
        self._write_slurm_conf()
        if self.accounting:
            self.run("sacctmgr", "-i", "add", "cluster", "cdsbench-test")
        log = self.dir / "log"
        self._spawn("slurmctld", ["slurmctld", "-D", "-i"], log / "slurmctld.log")
        _wait("slurmctld", lambda: self.run("scontrol", "ping", check=False).stdout.count("UP") >= 1, 30,
              [log / "slurmctld.log"])
        self._spawn("slurmd", ["slurmd", "-D", "-N", self.node], log / "slurmd.log")
        _wait("slurmd", lambda: "idle" in self.run("sinfo", "-h", "-o", "%T", check=False).stdout, 30,
              [log / "slurmd.log", log / "slurmctld.log"])

    def _start_munge(self) -> None:
        m = self.dir / "munge"
        self.munge_socket = m / "munge.socket"
        subprocess.run(["mungekey", "-c", "-f", "-k", str(m / "munge.key")], check=True, capture_output=True)
        os.chmod(m, 0o700)
        self._spawn("munged", ["munged", "-F", "--force", "--key-file", str(m / "munge.key"),
                               "--socket", str(self.munge_socket), "--pid-file", str(m / "munged.pid"),
                               "--seed-file", str(m / "munged.seed"), "--log-file", str(self.dir / "log" / "munged.log")],
                    self.dir / "log" / "munged.out")
        _wait("munged", self.munge_socket.exists, 10, [self.dir / "log" / "munged.log", self.dir / "log" / "munged.out"])

    def _start_mariadb(self) -> None:
        data = self.dir / "mysql"
        self.mysql_port = free_port()
        self.mysql_socket = self.dir / "run" / "mysqld.sock"
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       check=True, capture_output=True, timeout=120)
        self._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
                                 f"--socket={self.mysql_socket}", f"--port={self.mysql_port}",
                                 "--bind-address=127.0.0.1", f"--pid-file={self.dir / 'run' / 'mysqld.pid'}",
                                 "--skip-name-resolve", "--innodb-buffer-pool-size=32M"],
                    self.dir / "log" / "mariadbd.log")
        _wait("mariadbd", self.mysql_socket.exists, 60, [self.dir / "log" / "mariadbd.log"])

    def _start_slurmdbd(self) -> None:
        self.dbd_port = free_port()
        conf = self.dir / "etc" / "slurmdbd.conf"
        conf.write_text(f"""AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.dbd_port}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.mysql_port}
StorageUser=root
StorageLoc=slurm_acct_db
PidFile={self.dir / 'run' / 'slurmdbd.pid'}
LogFile={self.dir / 'log' / 'slurmdbd.log'}
""")
        os.chmod(conf, 0o600)
        self._write_slurm_conf()  # slurmdbd reads slurm.conf's directory for slurmdbd.conf
        self._spawn("slurmdbd", ["slurmdbd", "-D"], self.dir / "log" / "slurmdbd.out")

        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.dbd_port)) == 0
        _wait("slurmdbd", up, 60, [self.dir / "log" / "slurmdbd.log", self.dir / "log" / "slurmdbd.out"])

    def _write_slurm_conf(self) -> None:
        if not hasattr(self, "ctld_port"):
            self.ctld_port, self.slurmd_port = free_port(), free_port()
        # AccountingStoragePass names the munge socket of the connections to slurmdbd.
        accounting = (f"AccountingStorageType=accounting_storage/slurmdbd\n"
                      f"AccountingStorageHost=127.0.0.1\nAccountingStoragePort={self.dbd_port}\n"
                      f"AccountingStoragePass={self.munge_socket}\n"
                      if self.accounting else "AccountingStorageType=accounting_storage/none\n")
        self.conf.write_text(f"""ClusterName=cdsbench-test
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={self.dir / 'ctld'}
SlurmdSpoolDir={self.dir / 'slurmd'}
SlurmctldPidFile={self.dir / 'run' / 'slurmctld.pid'}
SlurmdPidFile={self.dir / 'run' / 'slurmd.pid'}
SlurmctldLogFile={self.dir / 'log' / 'slurmctld.log'}
SlurmdLogFile={self.dir / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobAcctGatherType=jobacct_gather/none
{accounting}JobCompType=jobcomp/none
MaxArraySize={self.max_array_size}
MinJobAge=2
InactiveLimit=0
KillWait=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName={self.node} NodeAddr=127.0.0.1 {_node_resources()} State=UNKNOWN
PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")

    def stop(self) -> None:
        # Clients' jobs first (their processes belong to slurmd), then the daemons, newest first.
        if any(name == "slurmctld" for name, _ in self.daemons):
            self.run("scancel", "--full", "--partition", self.partition, check=False)
        for name, p in reversed(self.daemons):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.daemons.clear()
