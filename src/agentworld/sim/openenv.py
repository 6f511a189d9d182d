"""OpenEnv's types, client and ``Environment`` for AgentWorld's environments.

Every AgentWorld environment reads text actions and shows text observations, so one
action type and one observation type serve them all: :class:`TextAction` (``text``, the
action as the world model and the recorder see it: keystroke or tool-call JSON included)
and :class:`TextObservation` (``text``, the step's ``info`` as ``metadata``).

Two ways to serve an environment to OpenEnv clients:

- ``agentworld sim serve`` / ``agentworld env serve ENV_ID`` (:mod:`agentworld.sim.server`):
  OpenEnv's WebSocket protocol plus this project's guarantees (session cap with clear
  refusals, bounded requests and messages, a bearer token, backpressure, recording, and
  HTTP ``/reset``/``/step`` that keep a session);
- :func:`openenv_app`: openenv-core's own ``create_app`` over :class:`AgentWorldEnvironment`,
  for OpenEnv's tooling (its web UI, ``openenv push``); none of the guarantees above.

Either way ``GenericEnvClient`` or :class:`AgentWorldClient` (typed, and able to send the
bearer token) drives it. Needs ``pip install 'agentworld[agents]'`` (openenv-core).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State
from pydantic import Field

from agentworld.envs.base import Env


class TextAction(Action):
    """An AgentWorld action: the text the environment reads."""

    text: str = Field(description="the action text (JSON for tool calls and keystroke batches)")


class TextObservation(Observation):
    """An AgentWorld observation: what the environment shows, the step's info as metadata."""

    text: str = Field(default="", description="what the environment shows")


class AgentWorldClient(EnvClient[TextAction, TextObservation, State]):
    """A typed OpenEnv client for a served AgentWorld environment.

    ``token``: the server's bearer token (``--token``), sent when the WebSocket opens;
    openenv-core's own clients send no headers, so they reach only open servers.
    Actions may be a :class:`TextAction`, plain text or a dict of the action's fields.
    """

    def __init__(self, base_url: str, *, token: str | None = None, **kwargs: Any):
        super().__init__(base_url, **kwargs)
        self._token = token

    async def connect(self) -> AgentWorldClient:
        if self._ws is not None or self._token is None:
            await super().connect()
            return self
        from websockets.asyncio.client import connect as ws_connect

        try:
            self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout, max_size=self._max_message_size,
                                        additional_headers={"Authorization": f"Bearer {self._token}"})
        except Exception as exc:  # the base client's wording: a ConnectionError naming the URL
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self

    def _step_payload(self, action: TextAction | str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, str):
            return {"text": action}
        return dict(action) if isinstance(action, dict) else action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TextObservation]:
        obs = payload.get("observation") or {}
        done, reward = bool(payload.get("done", False)), payload.get("reward")
        observation = TextObservation(text=obs.get("text", ""), metadata=obs.get("metadata") or {}, done=done, reward=reward)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


class AgentWorldEnvironment(Environment[TextAction, TextObservation, State]):
    """One AgentWorld :class:`~agentworld.envs.base.Env` as an OpenEnv ``Environment``
    (one instance per OpenEnv session: ``SUPPORTS_CONCURRENT_SESSIONS``)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env: Env):
        super().__init__()
        self.env = env
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None,
              **kwargs: Any) -> TextObservation:
        if kwargs:
            raise ValueError(f"unknown reset arguments: {', '.join(sorted(kwargs))} (known: seed, episode_id, options)")
        res = self.env.reset(seed=seed, options=options)
        self._state = State(episode_id=episode_id, step_count=0)
        return TextObservation(text=res.observation, metadata=res.info)

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        res = self.env.step(action.text)
        self._state.step_count += 1
        return TextObservation(text=res.observation, metadata=res.info, reward=res.reward,
                               done=res.terminated or res.truncated)

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.env.close()


class OpenEnvTool:
    """One served AgentWorld environment as an environment of TRL's ``GRPOTrainer``
    (``environment_factory=lambda: OpenEnvTool(URL)``): one OpenEnv session per instance.

    TRL offers the model every public method but ``reset`` and ``get_reward`` as a tool:
    here one, :meth:`act`. ``reset`` returns the first observation (TRL appends it to the
    prompt); ``get_reward`` is the episode's summed reward (the environment's own: a
    simulated scenario's success, a task's verifier). ``reset_kwargs`` go to every reset
    (``seed``, ``options``, a simulated ``scenario``).
    """

    def __init__(self, base_url: str, *, token: str | None = None, **reset_kwargs: Any):
        self._client = AgentWorldClient(base_url, token=token).sync()
        self._client.connect()
        self._reset_kwargs = reset_kwargs
        self._reward, self._done = 0.0, False

    def reset(self, **kwargs: Any) -> str | None:
        # TRL passes the dataset row's fields; the episode comes from the server's scenario or task.
        result = self._client.reset(**self._reset_kwargs)
        self._reward, self._done = 0.0, False
        return result.observation.text

    def act(self, action: str) -> str:
        """Send one action to the environment and return what it shows next.

        Args:
            action: The action text: keystrokes for a terminal as a JSON list of {"keystrokes", "duration"}, or a tool call as JSON {"name", "arguments"}.
        """
        if self._done:
            return "The episode is over: no more actions are taken."
        result = self._client.step(TextAction(text=action))
        self._reward += float(result.reward or 0.0)
        self._done = result.done
        return result.observation.text

    def get_reward(self) -> float:
        return self._reward

    def _close(self) -> None:  # private: TRL would offer a public method to the model as a tool
        self._client.close()


def openenv_app(factory: Callable[[], Env], *, max_concurrent_envs: int = 4) -> Any:
    """openenv-core's own FastAPI app over environments made by ``factory`` (one per session)."""
    from openenv.core.env_server import create_app

    return create_app(lambda: AgentWorldEnvironment(factory()), TextAction, TextObservation,
                      max_concurrent_envs=max_concurrent_envs)


__all__ = ["AgentWorldClient", "AgentWorldEnvironment", "OpenEnvTool", "TextAction", "TextObservation", "openenv_app"]
