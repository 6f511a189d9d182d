"""Agents in the worlds: tasks with verifiable rewards, policies, episodes, rollouts, GRPO.

- :mod:`.tasks`: seeded task families (terminal, mcp, search) that run unchanged in the
  real environments and in the simulator, with graders that say what decided each check;
- :mod:`.policy`: a policy over the shared backend spec, or the ``scripted``/``idle`` ones;
- :mod:`.runner`: one graded episode (``run_episode``), real or simulated;
- :mod:`.rollout`: many at once into a resumable JSONL, and the eval summary with CIs;
- :mod:`.train`: multi-turn GRPO of the policy with TRL's environment hook.

Used by ``agentworld agent rollout|eval|train|tasks``.
"""
