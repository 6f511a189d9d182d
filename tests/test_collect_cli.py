"""The collect commands' shared options: declared once, with per-command defaults, in one order."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.records.trajectory import read_trajectories, write_trajectories

SHARED_HEAD = ["out_path", "episodes", "test_episodes", "seed", "workers", "bench_dir"]
SHARED_TAIL = ["agent", "agent_opt", "executor", "ray_address", "ray_workers", "ray_cpus", "ray_memory_mb"]


def _params(command: str) -> dict[str, object]:
    group = typer.main.get_command(app).commands["collect"]  # type: ignore[attr-defined]
    return {p.name: p.default for p in group.commands[command].params}


def test_every_command_takes_the_shared_options_around_its_own() -> None:
    own = {
        "terminal": ["template", "build", "max_steps"],
        "mcp": ["template", "agent_native_tools"],
        "search": ["template", "corpus", "build", "rebuild", "max_pages", "source", "agent_native_tools"],
        "swe": ["repo", "agent_native_tools", "max_steps", "download"],
        "os": ["template", "build", "max_steps", "episode_timeout"],
        "web": ["template", "max_steps", "episode_timeout"],
    }
    for command, names in own.items():
        assert list(_params(command)) == [*SHARED_HEAD, *names, *SHARED_TAIL], command


def test_episode_defaults_are_per_command() -> None:
    expected = {"terminal": (20, 60), "mcp": (20, 30), "search": (20, 30), "swe": (0, 30), "os": (20, 40), "web": (40, 40)}
    for command, (episodes, test_episodes) in expected.items():
        params = _params(command)
        assert (params["episodes"], params["test_episodes"]) == (episodes, test_episodes), command
        assert (params["seed"], params["workers"], params["agent"]) == (0, 2, "scripted"), command


def test_shared_options_reach_the_run(tmp_path: Path) -> None:
    # No episodes to record: the options still travel to the report, which names the file.
    out = tmp_path / "none.jsonl"
    res = CliRunner().invoke(app, ["collect", "mcp", "-t", "time", "--episodes", "0", "--test-episodes", "0",
                                   "-o", str(out)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert f"{out}: 0 recorded, 0 already there, 0 failed" in res.output


# -- resume key and template families ---------------------------------------------------

def _episode(job: object) -> object:
    from agentworld.records.trajectory import Trajectory, Turn

    return Trajectory(id=job.job_id, domain="terminal", turns=[  # type: ignore[attr-defined]
        Turn(action=f"echo {job.task} {job.seed}", observation=f"{job.task} {job.seed} printed")])  # type: ignore[attr-defined]


def test_two_templates_on_one_seed_are_two_jobs(tmp_path: Path) -> None:
    from agentworld.cli.collect._app import job_id, resume_key
    from agentworld.envs.collect import EpisodeJob, run_collection

    out = tmp_path / "t.jsonl"
    key = resume_key("terminal")
    first = [EpisodeJob(job_id("terminal", "train", "a", 0), seed=0, task="a")]
    assert run_collection(first, _episode, out=out, show_progress=False, resume_key=key).done == 1
    # the same seed with another template (another --template, or a changed template list) records
    both = [*first, EpisodeJob(job_id("terminal", "train", "b", 0), seed=0, task="b")]
    rep = run_collection(both, _episode, out=out, show_progress=False, resume_key=key)
    assert (rep.done, rep.skipped) == (1, 1)
    assert [t.id for t in read_trajectories(out).items] == ["terminal-train-a-0", "terminal-train-b-0"]


def test_files_with_ids_without_a_template_still_resume(tmp_path: Path) -> None:
    from agentworld.cli.collect._app import job_id, resume_key
    from agentworld.envs.collect import EpisodeJob, run_collection
    from agentworld.records.trajectory import Provenance, Trajectory, Turn

    out = tmp_path / "old.jsonl"

    def old(tid: str, task: str | None, split: str) -> Trajectory:
        return Trajectory(id=tid, domain="terminal", turns=[Turn(action=f"echo {tid}", observation=f"{tid} printed")],
                          provenance=Provenance(job_id=tid, task=task, split=split))

    write_trajectories(out, [old("terminal-train-0", "a", "train"), old("terminal-test-1000000", "b", "test"),
                             old("terminal-train-1", None, "train")])
    key = resume_key("terminal")
    assert [key(t) for t in read_trajectories(out).items] == [
        "terminal-train-a-0", "terminal-test-b-1000000", "terminal-train-1"]  # no task: not decidable
    jobs = [EpisodeJob(job_id("terminal", "train", "a", 0), seed=0, task="a"),
            EpisodeJob(job_id("terminal", "train", "c", 0), seed=0, task="c"),
            EpisodeJob(job_id("terminal", "test", "b", 1000000), seed=1000000, split="test", task="b")]
    rep = run_collection(jobs, _episode, out=out, bench_dir=tmp_path / "bench", show_progress=False, resume_key=key)
    assert (rep.done, rep.skipped) == (1, 2)
    # the old held-out episode is still the benchmark's, not a training one
    assert rep.bench_files == {str(tmp_path / "bench" / "terminal_test.jsonl"): 1} and rep.bench_left_out == 0
    # a recorded SWE repair names its bug; its template is the repository
    swe = Trajectory(id="swe-train-3", domain="swe", provenance=Provenance(job_id="swe-train-3", task="repair:semver:negate"))
    assert resume_key("swe")(swe) == "swe-train-semver-3"


def test_collect_holds_out_whole_families() -> None:
    from agentworld.cli.collect._app import FAMILY_SPLIT_RULE, split_families, split_jobs
    from agentworld.envs.os import TEMPLATES as OS
    from agentworld.envs.split import SPLIT_RULE, split_templates
    from agentworld.envs.terminal import TEMPLATES as TERMINAL

    split = split_families("os", OS.names(), OS.families())
    family = OS.family_of()
    assert family["type_list"] == "save_new_document" and family["calc_keyboard"] == "calc_clear"
    for name in OS.names():
        assert split.side(name) == split.side(family[name]), name
    assert set(split.train) | set(split.test) == set(OS.names()) and not set(split.train) & set(split.test)
    jobs = split_jobs("os", 40, 40, 0, OS.names(), None, OS.families())
    sides = {(j.task, j.split) for j in jobs}
    assert {side for task, side in sides if task in ("type_list", "save_new_document")} == {split.side("type_list")}
    assert {j.split_by for j in jobs} == {FAMILY_SPLIT_RULE}
    # templates alone in their family split as before, under the same rule name
    assert split_families("terminal", TERMINAL.names(), TERMINAL.families()) == \
        split_templates("terminal", TERMINAL.names(), families=TERMINAL.families())
    assert {j.split_by for j in split_jobs("terminal", 3, 3, 0, TERMINAL.names(), None, TERMINAL.families())} == {SPLIT_RULE}


def test_a_file_split_by_another_rule_is_noted(tmp_path: Path) -> None:
    from agentworld.cli.collect._app import FAMILY_SPLIT_RULE, _other_split_rules
    from agentworld.records.trajectory import Provenance, Trajectory

    out = tmp_path / "os.jsonl"
    assert _other_split_rules(out, {FAMILY_SPLIT_RULE}) == []
    old = Trajectory(id="os-train-0", domain="os", provenance=Provenance(job_id="os-train-0", split="train",
                                                                         split_by="template-v1"))
    write_trajectories(out, [old])
    assert _other_split_rules(out, {FAMILY_SPLIT_RULE}) == ["template-v1"]
    assert _other_split_rules(out, {"template-v1"}) == []
