"""Broker processes for scripts/cluster_figures.py: a single node and the
nodes of one cluster on free loopback ports, each stopped by its PID, and
what the figures read from them (CPU time, resident memory, Stats, logs).

Nothing here is a test: the cluster's tests are in tests/cluster/.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")

# More environment for every broker started (e.g. MALLOC_CONF).
NODE_ENV = {}


def free_port():
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, timeout):
    """True once something accepts on 127.0.0.1:port, within timeout s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def cpu_seconds(pid):
    """User + system CPU seconds of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid):
    """Resident memory of process pid in KiB (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def loadavg():
    """The machine's 1-minute load average (other helpers' builds too)."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_stopped(pid, timeout=2.0):
    """Waits until every thread of pid is stopped (kill() only queues)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if states and all(s in ("T", "t") for s in states):
            return True
        time.sleep(0.002)
    return False


class Broker:
    """One broker process; `name` is its node name (None: single node)."""

    def __init__(self, binary, workdir, name=None, cluster_toml=None):
        self.binary = binary
        self.name = name or "single"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cluster_port = free_port() if name else None
        self.cluster_toml = cluster_toml
        self.log_path = os.path.join(workdir, f"{self.name}.log")
        self.config = os.path.join(workdir, f"{self.name}.toml")
        self.proc = None
        self.log = None

    def start(self, peers=(), extra="", top=""):
        """Starts the process; with a node name, a node whose peers are
        `peers` (Broker objects) and with `extra` TOML lines in
        [cluster]."""
        # Metrics on a free port: the default one would collide.
        text = (f'listen = "{self.address}"\n{top}\n'
                '[metrics]\nlisten = "127.0.0.1:0"\n')
        if self.cluster_port:
            peer_list = ", ".join(f'"127.0.0.1:{p.cluster_port}"'
                                  for p in peers)
            text += (f'[cluster]\nname = "{self.name}"\n'
                     f'listen = "127.0.0.1:{self.cluster_port}"\n'
                     f"peers = [{peer_list}]\n{extra}\n")
        with open(self.config, "w") as f:
            f.write(text)
        self.log = open(self.log_path, "ab")
        env = dict(os.environ)
        env.update(NODE_ENV)
        self.proc = subprocess.Popen([self.binary, "--config", self.config],
                                     stdout=self.log, stderr=self.log,
                                     env=env)

    @property
    def pid(self):
        return self.proc.pid

    def wait_ready(self, timeout=20):
        """A node opens its gRPC port only once it is ready."""
        if not wait_listening(self.port, timeout):
            raise SystemExit(f"cluster_figures: {self.name} not ready; "
                             f"see {self.log_path}")

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        """SIGCONT (a stopped node must see the signal), then SIGTERM by
        PID; SIGKILL if it does not end within 10 s."""
        if not self.proc or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Cluster:
    """n nodes n1..nN, full mesh, each with `extra` TOML in [cluster] and
    `top` TOML at the top of its config (e.g. worker_threads = 1)."""

    def __init__(self, binary, n=3, extra="", top=""):
        self.dir = tempfile.mkdtemp(prefix="tb-cluster-figures-")
        self.nodes = [Broker(binary, self.dir, f"n{i + 1}") for i in range(n)]
        self.extra = extra
        self.top = top

    def __enter__(self):
        try:
            for node in self.nodes:
                node.start([p for p in self.nodes if p is not node],
                           self.extra, self.top)
            for node in self.nodes:
                node.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for node in self.nodes:
            node.stop()


class Single:
    """One broker without [cluster], with `top` TOML as Cluster's."""

    def __init__(self, binary, top=""):
        self.dir = tempfile.mkdtemp(prefix="tb-single-figures-")
        self.node = Broker(binary, self.dir)
        self.top = top

    def __enter__(self):
        self.node.start(top=self.top)
        try:
            self.node.wait_ready()
        except BaseException:
            self.node.stop()
            raise
        return self.node

    def __exit__(self, *exc):
        self.node.stop()


def cluster_stats(cli, node):
    """`tinybroker-cli --json cluster` of node, as a dict."""
    out = subprocess.run([cli, "--server", node.address, "--json", "cluster"],
                         capture_output=True, text=True, timeout=10)
    return json.loads(out.stdout)


def peer_of(stats, name):
    """The peer entry called name in cluster_stats()'s answer ({} if none)."""
    for p in stats.get("peers", []):
        if p.get("name") == name:
            return p
    return {}


def run_bench(bench, args, timeout=600):
    """Runs tinybroker-bench with --json; returns its report (a dict) with
    "exit_code" added."""
    out = subprocess.run([bench, "--json"] + args, capture_output=True,
                         text=True, timeout=timeout)
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise SystemExit(f"cluster_figures: bench {args} printed nothing: "
                         f"{out.stderr.strip()}")
    report = json.loads(lines[-1])
    report["exit_code"] = out.returncode
    return report


def make_tls_files(source_dir):
    """Makes the test CA, a client certificate (tests/e2e/
    make_test_certs.sh) and a node certificate for both TLS purposes with
    IP 127.0.0.1 in a temporary directory; returns (top TOML with [tls] for
    the brokers, bench arguments)."""
    d = tempfile.mkdtemp(prefix="tb-figures-certs-")
    subprocess.run(["sh", os.path.join(source_dir, "tests", "e2e",
                                       "make_test_certs.sh"), d],
                   check=True, capture_output=True)
    with open(os.path.join(d, "node.ext"), "w") as f:
        f.write("extendedKeyUsage=serverAuth,clientAuth\n"
                "subjectAltName=IP:127.0.0.1\n")
    subprocess.run(
        f"cd '{d}' && openssl req -new -newkey ec -pkeyopt "
        "ec_paramgen_curve:P-256 -nodes -subj /CN=node -keyout node.key "
        "-out node.csr && openssl x509 -req -in node.csr -CA ca.crt -CAkey "
        "ca.key -CAcreateserial -days 2 -extfile node.ext -out node.crt",
        shell=True, check=True, capture_output=True)
    top = (f'[tls]\ncert = "{d}/node.crt"\nkey = "{d}/node.key"\n'
           f'client_ca = "{d}/ca.crt"\n')
    bench = ["--ca", f"{d}/ca.crt", "--cert", f"{d}/client.crt", "--key",
             f"{d}/client.key"]
    return top, bench
