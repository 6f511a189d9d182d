"""The executor choice shared by collect, bench and data, and connecting to a Ray cluster."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

EXECUTORS = ("local", "ray")

INSTALL_HINT = "pip install 'agentworld[ray]'"


class ExecutorUnavailable(RuntimeError):
    """The chosen executor cannot run here (Ray missing, no cluster at the address)."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass(frozen=True)
class ExecutorConfig:
    """Where parallel work runs and, on Ray, what each unit of work asks for."""

    kind: Literal["local", "ray"] = "local"
    address: str = "auto"
    """``auto``: the cluster this machine belongs to (``ray start``, ``$RAY_ADDRESS``), else a
    new local one on 127.0.0.1; otherwise a Ray address (``HOST:PORT``, ``ray://HOST:PORT``)."""
    workers: int | None = None
    """Ray: model actors, or episodes/chunks in flight; None: one per GPU, else per CPU slot."""
    num_cpus: float = 1.0
    """CPUs each episode task or model actor reserves."""
    memory_mb: int | None = None
    """Memory each episode task or model actor reserves (None: no reservation)."""
    max_retries: int = 1
    """Times Ray reruns an episode whose worker or node died (the output is written once)."""

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ValueError(f"unknown executor {self.kind!r}; choose from {', '.join(EXECUTORS)}")
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1")

    @property
    def is_ray(self) -> bool:
        return self.kind == "ray"

    def resources(self) -> dict[str, Any]:
        """Ray ``options()`` for one unit of work: its CPUs and memory."""
        opts: dict[str, Any] = {"num_cpus": self.num_cpus}
        if self.memory_mb:
            opts["memory"] = self.memory_mb * 1024 * 1024
        return opts


def require_ray() -> ModuleType:
    """The ``ray`` module, or :class:`ExecutorUnavailable` naming the install command."""
    try:
        import ray
    except ImportError:
        raise ExecutorUnavailable("--executor ray needs Ray, which is not installed", INSTALL_HINT) from None
    return ray


def connect(config: ExecutorConfig) -> tuple[ModuleType, bool]:
    """Ray, connected to the configured cluster, and whether this call started the
    session. One already connected (a test fixture, a notebook) is reused as it is."""
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    try:
        if config.address != "auto":
            ray.init(address=config.address, **kwargs)
            return ray, True
        try:
            ray.init(address="auto", **kwargs)  # the cluster of `ray start` or $RAY_ADDRESS
        except ConnectionError:
            # None running: a new local cluster, listening on loopback only.
            ray.init(address="local", _node_ip_address="127.0.0.1", **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ExecutorUnavailable(f"cannot connect to the Ray cluster at {config.address!r}: {exc}",
                                  "start one with `ray start --head`, or pass --ray-address HOST:PORT") from None
    return ray, True


@contextmanager
def ray_session(config: ExecutorConfig) -> Iterator[ModuleType]:
    """:func:`connect` for a block: a session started here is shut down on exit."""
    ray, started = connect(config)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def cluster_slots(ray: ModuleType, config: ExecutorConfig) -> tuple[int, bool]:
    """How many units of work run at once, and whether each gets a GPU: ``workers`` when
    given, else one per GPU of the cluster, else one per ``num_cpus`` CPUs."""
    total = ray.cluster_resources()
    gpus = int(total.get("GPU", 0))
    if config.workers is not None:
        return config.workers, gpus >= config.workers
    if gpus:
        return gpus, True
    return max(1, int(total.get("CPU", 1) // max(config.num_cpus, 0.001))), False
