"""SWE: a coding agent edits a repository through file and shell tools."""

from agentworld.domains._spec import DomainSpec
from agentworld.domains.toolcall import effects  # what a call did: see agentworld.domains.toolcall

SPEC = DomainSpec(
    name="swe",
    title="Software engineering",
    environment="a software repository checked out in a sandbox, driven through file and shell tools",
    action_space=(
        'Each action is one JSON tool call {"name": "<tool>", "arguments": {...}} to a tool '
        "declared in the tool schemas (typically: view a file or directory, create a file, "
        "replace a unique string, insert lines, undo the last edit, run a bash command)."
    ),
    observation_format=(
        "Print what the tool prints: file views with line numbers (`     1\\tline`), the "
        "edited snippet after an edit, directory listings, and for bash the command's "
        "output followed by its exit code. Errors (missing file, non-unique string, failing "
        "tests) are reproduced as the tool reports them."
    ),
    tools_define_actions=True,
    judge_guidance=(
        "The observation is the output of a file or shell tool in a repository. File "
        "views must show the content as last written in the session with correct line "
        "numbers; edit confirmations, test runs and error messages must match what the "
        "tool prints for that input."
    ),
)

__all__ = ["SPEC", "effects"]
