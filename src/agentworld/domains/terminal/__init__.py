"""Terminal: the agent types keystrokes into a shell; the observation is the screen.

The domain's knowledge, one module each: the action format (:mod:`.keys`: keystroke
batches, the text they type), the screen format (:mod:`.screen`: the shell prompt), the
shell reading (:mod:`.shell`: words, commands, here-documents) and what an action did
(:mod:`.effects`).
"""

from agentworld.domains._spec import DomainSpec
from agentworld.domains.terminal.effects import effects
from agentworld.domains.terminal.keys import ActionError, Batch, action_json, parse_action, read_batches, typed_text
from agentworld.domains.terminal.screen import last_prompt

SPEC = DomainSpec(
    name="terminal",
    title="Terminal",
    environment="a Linux terminal (a tmux pane running an interactive shell)",
    action_space=(
        "Each action is a JSON list of keystroke batches: "
        '[{"keystrokes": "ls -la\\n", "duration": 1.0}, ...]. '
        "Text is typed as is and \\n presses Enter, which runs the line. The control keys "
        "C-c (interrupt), C-d (end of input), C-z (suspend) and C-l (clear screen) are sent "
        "as their own keystrokes. An empty keystrokes string means: wait for `duration` "
        "seconds and look at the screen again."
    ),
    observation_format=(
        "Print the terminal screen after the keystrokes: the echoed command line, everything "
        "the program writes to stdout and stderr in order, and the next shell prompt (for "
        "example `root@sandbox:/workspace#`) once the command has finished. A command still "
        "running after `duration` shows only its partial output and no new prompt. Full-screen "
        "programs (less, vim, nano, top) show their screen as drawn."
    ),
    judge_guidance=(
        "The observation is a terminal screen. Check the echoed command line, the prompt "
        "(user, host, working directory), and the output: results computed from files "
        "written in the session, echoed text and exit behaviour must be exact; listings "
        "of directories never shown, versions and other pre-existing content need only be "
        "plausible; PIDs, timestamps and sizes need the right format and range."
    ),
)

__all__ = ["SPEC", "ActionError", "Batch", "action_json", "effects", "last_prompt", "parse_action", "read_batches",
           "typed_text"]
