"""Where parallel work runs: in this process (``local``, the default) or on a Ray cluster (``ray``).

The local executor is what every command did before: threads for collection, one
asyncio loop for evaluation, processes for the data builders. The Ray executor hands
the same units of work to a Ray cluster -- an episode per task, a model per actor, a
data chunk per Ray Data block -- while the driver keeps writing the same resumable
files. Ray is imported only when the Ray executor is chosen (``pip install
'agentworld[ray]'``).
"""

from agentworld.executors.config import EXECUTORS, ExecutorConfig, ExecutorUnavailable, require_ray

__all__ = ["EXECUTORS", "ExecutorConfig", "ExecutorUnavailable", "require_ray"]
