"""Every os template, played once by its script (seed 0) in one reused desktop, must pass
its own check of the effect it states, with no scripted step lost (a step that changed
nothing where the script expects a change fails the episode)."""

from __future__ import annotations

import pytest

from agentworld.envs.os import TEMPLATES, DesktopEnv
from agentworld.envs.os.drivers import TaskCheckFailed, run_scripted

pytestmark = [pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env() -> DesktopEnv:
    from test_env_os import _need_desktop

    _need_desktop()
    with DesktopEnv() as e:
        yield e


def test_every_template_has_a_check() -> None:
    missing = [n for n in TEMPLATES.names() if TEMPLATES.get(n).instance(0).check is None]
    assert not missing


@pytest.mark.parametrize("name", TEMPLATES.names())
def test_template_does_what_it_says(env: DesktopEnv, name: str) -> None:
    task = TEMPLATES.get(name).instance(0)
    traj = run_scripted(env, task, seed=0, trajectory_id=name)  # raises on a lost step or a failed check
    assert traj.turns


def test_a_failed_check_fails_the_episode(env: DesktopEnv) -> None:
    import dataclasses

    task = TEMPLATES.get("calc_keyboard").instance(0)
    wrong = dataclasses.replace(task, check=lambda out: "the display is wrong on purpose")
    with pytest.raises(TaskCheckFailed, match="calc_keyboard .*on purpose"):
        run_scripted(env, wrong, seed=0, trajectory_id="x")
