"""Seeded desktop task templates: editing, saving, dialogs, menus, a calculator, errors.

Each template draws its file names, contents and inputs from the seed and scripts the
way through with what a user of the real applications does: shortcuts, menus opened
and items clicked at the centre the accessibility tree gives (read from the latest
observation, like an agent), dialogs answered, and the usual mistakes (a typo in the
program, a key pyautogui does not know, a node that is not on screen).

Every template states its effect and checks it once the script has run (``check``: the
saved file's text, the calculator's display, the menu's mode, the new tab...). Steps whose
effect the tree does not show (a selection, a copy, a caret already in place) are marked
with :func:`~agentworld.envs.os.task.maybe`; any other step must change the observation.
"""

from __future__ import annotations

import random
import re

from agentworld.domains.os import tree_nodes
from agentworld.envs.os.task import (
    CALCULATOR,
    EDITOR,
    MENU_ITEMS,
    Check,
    DesktopTask,
    Outcome,
    Script,
    activate,
    click,
    find,
    keys,
    maybe,
    press,
    write,
)
from agentworld.envs.templates import TemplateRegistry

TEMPLATES: TemplateRegistry[DesktopTask] = TemplateRegistry("os")

_WORDS = ("apple", "river", "stone", "cloud", "maple", "orbit", "pixel", "amber", "cedar", "delta", "ember",
          "fjord", "harbor", "island", "jasper", "kernel", "lumen", "meadow", "nectar", "opal", "prism",
          "quartz", "raven", "summit", "timber", "umber", "violet", "willow", "zenith", "comet")
_NAMES = ("notes", "todo", "draft", "report", "ideas", "log", "plan", "memo", "journal", "list")


def _line(rng: random.Random, n: int = 4) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _doc(rng: random.Random, lines: int | None = None) -> str:
    return "\n".join(_line(rng, rng.randint(3, 6)) for _ in range(lines or rng.randint(3, 6))) + "\n"


def _fname(rng: random.Random, ext: str = ".txt") -> str:
    return f"{rng.choice(_NAMES)}{rng.randint(1, 99)}{ext}"


def _editor(rng: random.Random) -> tuple[str, str, tuple[str, ...]]:
    name = _fname(rng)
    return name, _doc(rng), (*EDITOR, name)


def _save_dialog(name: str) -> Script:
    """In a save dialog: type the name (the name field has the focus) and press Enter."""
    yield maybe(keys("ctrl", "a"))  # the field may be empty; a selection does not show
    yield write(name)
    yield press("enter")


# -- checks -------------------------------------------------------------------------

def _file_is(name: str, want: str) -> Check:
    """The file ``name`` holds exactly ``want``."""
    def check(out: Outcome) -> str | None:
        got = out.read(name)
        if got is None:
            return f"{name} does not exist"
        return None if got == want else f"{name} holds {got!r}, not {want!r}"
    return check


def _all(*checks: Check) -> Check:
    def check(out: Outcome) -> str | None:
        return next((why for c in checks if (why := c(out)) is not None), None)
    return check


def _editor_text(observation: str) -> str | None:
    """The text of the focused editable text field (else the first editable one)."""
    fields = [n for n in tree_nodes(observation) if n.role == "text" and "editable" in n.states]
    focused = [n for n in fields if "focused" in n.states]
    return (focused or fields)[0].text if fields else None


def _editor_shows(want: str) -> Check:
    def check(out: Outcome) -> str | None:
        got = _editor_text(out.observation)
        return None if got == want else f"the editor shows {got!r}, not {want!r}"
    return check


def _title(want: str, *, active: bool = True) -> Check:
    """A window titled ``want`` is open (and active)."""
    def check(out: Outcome) -> str | None:
        frames = [n for n in tree_nodes(out.observation) if n.role == "frame"]
        frame = next((n for n in frames if n.name == want), None)
        if frame is None:
            return f"no window titled {want!r} (windows: {[n.name for n in frames]})"
        return f"the window {want!r} is not active" if active and "active" not in frame.states else None
    return check


def _saved_title(name: str) -> Check:
    return _title(f"/workspace/{name} - Mousepad")


def _display(observation: str) -> str | None:
    """The calculator's display: the first line of galculator's text field."""
    nodes = tree_nodes(observation)
    frame = next((i for i, n in enumerate(nodes) if n.role == "frame" and n.name == "galculator"), None)
    if frame is None:
        return None
    for n in nodes[frame + 1:]:
        if n.depth <= nodes[frame].depth:
            break
        if n.role == "text" and n.text is not None:
            return n.text.split("\n", 1)[0].strip()
    return None


def _display_is(want: str) -> Check:
    def check(out: Outcome) -> str | None:
        got = _display(out.observation)
        return None if got == want else f"the calculator shows {got!r}, not {want!r}"
    return check


_TEXT_INSET = """
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi
def walk(node):
    if node.get_role() == Atspi.Role.TEXT and node.get_state_set().contains(Atspi.StateType.FOCUSED):
        first = node.get_text_iface().get_character_extents(0, Atspi.CoordType.SCREEN)
        print(first.x - node.get_component_iface().get_extents(Atspi.CoordType.SCREEN).x)
    for i in range(node.get_child_count()):
        walk(node.get_child_at_index(i))
desktop = Atspi.get_desktop(0)
for i in range(desktop.get_child_count()):
    walk(desktop.get_child_at_index(i))
"""
"""Prints how far right of the focused text field its first character starts: the line
numbers' gutter moves it (the tree does not show the gutter)."""


# -- editing ------------------------------------------------------------------------

@TEMPLATES.add("append_line", "editing")
def _append_line(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _line(rng)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(new + "\n")
        yield keys("ctrl", "s")

    return DesktopTask("append_line", f"Add the line '{new}' at the end of {name} in the editor and save it.",
                       (app,), {name: text}, script, "editing", _file_is(name, text + new + "\n"))


@TEMPLATES.add("insert_heading", "editing")
def _insert_heading(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    head = f"# {rng.choice(_WORDS).title()} {rng.randint(1, 9)}"

    def script(obs: str) -> Script:
        yield maybe(keys("ctrl", "home"))  # the caret starts there
        yield write(head + "\n\n")
        yield keys("ctrl", "s")

    return DesktopTask("insert_heading", f"Insert the heading '{head}' and a blank line at the top of {name}, then save.",
                       (app,), {name: text}, script, "editing", _file_is(name, f"{head}\n\n{text}"))


@TEMPLATES.add("replace_content", "editing")
def _replace_content(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _doc(rng, 2)

    def script(obs: str) -> Script:
        yield maybe(keys("ctrl", "a"))  # a selection does not show in the tree
        yield write(new)
        yield keys("ctrl", "s")

    return DesktopTask("replace_content", f"Replace everything in {name} with new text and save it.",
                       (app,), {name: text}, script, "editing", _file_is(name, new))


@TEMPLATES.add("undo_typing", "editing")
def _undo_typing(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    junk = _line(rng, 2)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(junk)
        yield keys("ctrl", "z")
        yield keys("ctrl", "z")

    return DesktopTask("undo_typing", f"Type some words at the end of {name}, then undo them.",
                       (app,), {name: text}, script, "editing", _all(_editor_shows(text), _file_is(name, text)))


@TEMPLATES.add("delete_first_line", "editing")
def _delete_first_line(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield maybe(keys("ctrl", "home"))  # the caret starts there
        yield keys("shift", "down")
        yield press("delete")
        yield keys("ctrl", "s")

    return DesktopTask("delete_first_line", f"Delete the first line of {name} and save.", (app,), {name: text},
                       script, "editing", _file_is(name, text.split("\n", 1)[1]))


# The same flow as save_new_document (type in a new document, save it through the dialog):
# its recorded episodes nearly copy that template's (Jaccard 0.87), so the two split together.
@TEMPLATES.add("type_list", "editing", family="save_new_document")
def _type_list(rng: random.Random) -> DesktopTask:
    items = [rng.choice(_WORDS) for _ in range(rng.randint(2, 4))]
    name = _fname(rng)

    def script(obs: str) -> Script:
        for i, item in enumerate(items, 1):
            yield write(f"{i}. {item}\n")
        yield keys("ctrl", "s")
        yield from _save_dialog(name)

    listed = "".join(f"{i}. {item}\n" for i, item in enumerate(items, 1))
    return DesktopTask("type_list", f"Type a numbered list of {', '.join(items)} in a new document and save it "
                       f"as {name}.", (EDITOR,), {}, script, "editing", _all(_file_is(name, listed), _saved_title(name)))


@TEMPLATES.add("xdotool_type", "editing")
def _xdotool_type(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _line(rng, 3)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield f"import subprocess\nsubprocess.run(['xdotool', 'type', '--delay', '20', {new!r}], check=True)"
        yield "import subprocess\nsubprocess.run(['xdotool', 'key', 'ctrl+s'], check=True)"

    return DesktopTask("xdotool_type", f"Use xdotool to type '{new}' at the end of {name}, then save with ctrl+s.",
                       (app,), {name: text}, script, "editing", _file_is(name, text + new))


@TEMPLATES.add("copy_first_line", "editing")
def _duplicate_line(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield maybe(keys("ctrl", "home"))  # the caret starts there
        yield keys("shift", "end")
        yield maybe(keys("ctrl", "c"))  # the clipboard does not show
        yield keys("ctrl", "end")
        yield keys("ctrl", "v")
        yield keys("ctrl", "s")

    return DesktopTask("copy_first_line", f"Copy the first line of {name} to the end of the file and save.",
                       (app,), {name: text}, script, "editing", _file_is(name, text + text.split("\n", 1)[0]))


# -- saving and dialogs -----------------------------------------------------------------

@TEMPLATES.add("save_new_document", "saving")
def _save_new(rng: random.Random) -> DesktopTask:
    name, body = _fname(rng), _line(rng)

    def script(obs: str) -> Script:
        yield write(body)
        yield keys("ctrl", "s")
        yield from _save_dialog(name)

    return DesktopTask("save_new_document", f"Write '{body}' in a new document and save it as {name}.",
                       (EDITOR,), {}, script, "saving", _all(_file_is(name, body), _saved_title(name)))


@TEMPLATES.add("save_as_copy", "saving")
def _save_as(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    copy = _fname(rng, ".bak")

    def script(obs: str) -> Script:
        yield keys("ctrl", "shift", "s")
        yield from _save_dialog(copy)

    return DesktopTask("save_as_copy", f"Save {name} under the new name {copy} with Save As.", (app,), {name: text},
                       script, "saving", _all(_file_is(copy, text), _file_is(name, text), _saved_title(copy)))


@TEMPLATES.add("save_as_overwrite", "dialogs")
def _overwrite(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    other = _fname(rng, ".md")

    files = {name: text, other: _doc(rng, 2)}
    junk = _line(rng, 2)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(junk)
        obs = yield keys("ctrl", "shift", "s")
        yield maybe(keys("ctrl", "a"))  # a selection does not show in the tree
        yield write(other)
        obs = yield press("enter")
        yield click(obs, "push-button", "Replace", fallback=press("enter"))

    return DesktopTask("save_as_overwrite", f"Save the edited {name} over the existing file {other}, confirming "
                       "the replacement.", (app,), files, script, "dialogs",
                       _all(_file_is(other, text + junk), _file_is(name, text), _saved_title(other)))


@TEMPLATES.add("close_discard", "dialogs")
def _close_discard(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    typed = _line(rng, 2)

    def script(obs: str) -> Script:
        yield write(typed)
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Don't Save", fallback=press("escape"))

    def closed(out: Outcome) -> str | None:
        left = [n.name for n in tree_nodes(out.observation) if n.role == "frame" and name in n.name]
        return f"the document is still open: {left}" if left else None

    return DesktopTask("close_discard", f"Type in {name}, then close the document without saving the change.",
                       (app,), {name: text}, script, "dialogs", _all(_file_is(name, text), closed))


@TEMPLATES.add("close_cancel", "dialogs")
def _close_cancel(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    typed = _line(rng, 2)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(typed)
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Cancel", fallback=press("escape"))
        yield keys("ctrl", "s")

    return DesktopTask("close_cancel", f"Edit {name}, start closing it, cancel the close, then save.",
                       (app,), {name: text}, script, "dialogs", _all(_file_is(name, text + typed), _saved_title(name)))


@TEMPLATES.add("close_and_save", "dialogs")
def _quit_save(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    added = _line(rng, 3) + "\n"

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(added)
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Save", fallback=press("enter"))

    return DesktopTask("close_and_save", f"Add a line to {name} and close it, saving when asked.", (app,),
                       {name: text}, script, "dialogs", _file_is(name, text + added))


@TEMPLATES.add("find_replace_dialog", "dialogs")
def _find_replace(rng: random.Random) -> DesktopTask:
    word = rng.choice(_WORDS)
    repl = rng.choice([w for w in _WORDS if w != word]).upper()
    name = _fname(rng)
    text = _doc(rng) + f"{word} {_line(rng, 2)} {word}\n"

    def script(obs: str) -> Script:
        yield keys("ctrl", "r")
        yield write(word)
        yield press("tab")
        obs = yield write(repl)
        obs = yield click(obs, "check-box", "Replace all in:")
        obs = yield click(obs, "push-button", "Replace All")
        yield press("escape")
        yield keys("ctrl", "s")

    return DesktopTask("find_replace_dialog", f"In {name}, replace every '{word}' with '{repl}' using the "
                       "Find and Replace dialog, then save.", ((*EDITOR, name),), {name: text}, script, "dialogs",
                       _file_is(name, text.replace(word, repl)))


@TEMPLATES.add("goto_line_dialog", "dialogs")
def _goto_line(rng: random.Random) -> DesktopTask:
    name = _fname(rng)
    text = _doc(rng, rng.randint(5, 8))
    line = rng.randint(2, 4)
    mark = f"TODO({rng.choice(_WORDS)})"

    def script(obs: str) -> Script:
        yield keys("ctrl", "l")
        yield maybe(keys("ctrl", "a"))  # a selection does not show in the tree
        yield write(str(line))
        yield press("enter")
        yield write(mark + " ")
        yield keys("ctrl", "s")

    lines = text.splitlines(keepends=True)
    lines[line - 1] = f"{mark} {lines[line - 1]}"
    return DesktopTask("goto_line_dialog", f"Go to line {line} of {name} with Go To Line, type '{mark}' there and save.",
                       ((*EDITOR, name),), {name: text}, script, "dialogs", _file_is(name, "".join(lines)))


@TEMPLATES.add("open_file_dialog", "dialogs")
def _open_file(rng: random.Random) -> DesktopTask:
    first, other = _fname(rng), _fname(rng, ".log")
    files = {first: _doc(rng, 2), other: _doc(rng, 3)}

    def script(obs: str) -> Script:
        yield keys("ctrl", "o")
        yield keys("ctrl", "l")
        yield write(f"/workspace/{other}")
        yield press("enter")
        yield keys("ctrl", "end")

    def at_end(out: Outcome) -> str | None:
        caret = re.search(r" caret=(\d+)", out.observation)
        want = len(files[other])
        return None if caret and int(caret.group(1)) == want else f"the caret is not at {other}'s end ({want})"

    return DesktopTask("open_file_dialog", f"Open {other} from the Open dialog and move to its end.",
                       ((*EDITOR, first),), files, script, "dialogs",
                       _all(_saved_title(other), _editor_shows(files[other]), at_end))


@TEMPLATES.add("find_bar", "dialogs")
def _find_bar(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    word = text.split()[rng.randrange(len(text.split()))]

    def script(obs: str) -> Script:
        yield keys("ctrl", "f")
        yield write(word)
        yield press("enter")
        yield press("escape")

    def found(out: Outcome) -> str | None:
        caret = re.search(r" caret=(\d+)", out.observation)
        at = text.find(word)
        if caret and int(caret.group(1)) in (at, at + len(word)):
            return None
        return f"the caret ({caret.group(1) if caret else None}) is not at the first {word!r} ({at})"

    return DesktopTask("find_bar", f"Search {name} for '{word}' with the find bar.", (app,), {name: text}, script,
                       "dialogs", _all(found, _saved_title(name)))


# -- menus -----------------------------------------------------------------------------

@TEMPLATES.add("menu_new_tab", "menus")
def _menu_new(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    body = _line(rng, 3)

    def script(obs: str) -> Script:
        obs = yield from _menu_then(obs, "File", "New")
        yield write(body)

    return DesktopTask("menu_new_tab", f"Open a new document from the File menu and type '{body}'.", (app,),
                       {name: text}, script, "menus", _all(_tabs(name, "Untitled 1"), _editor_shows(body)))


def _tabs(*names: str) -> Check:
    """The editor has exactly these tabs, the last one selected."""
    def check(out: Outcome) -> str | None:
        tabs = [n for n in tree_nodes(out.observation) if n.role == "page-tab"]
        got = tuple(n.name for n in tabs)
        if got != names:
            return f"the editor's tabs are {got}, not {names}"
        return None if "selected" in tabs[-1].states else f"the tab {names[-1]!r} is not selected"
    return check


def _menu_then(obs: str, menu: str, item: str) -> Script:
    """Open ``menu`` and click its ``item``, returning the observation after the click (an
    item not on screen presses Escape, and the task's check fails)."""
    obs = yield click(obs, "menu", menu, fallback=keys("alt", menu[0].lower()))
    after = yield click(obs, MENU_ITEMS, item, fallback=press("escape"))
    return after


@TEMPLATES.add("menu_select_all_copy", "menus")
def _menu_copy(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        obs = yield from _menu_then(obs, "Edit", "Select All")
        obs = yield from _menu_then(obs, "Edit", "Copy")
        obs = yield from _menu_then(obs, "File", "New")
        yield keys("ctrl", "v")

    return DesktopTask("menu_select_all_copy", f"Copy all of {name} with the Edit menu and paste it into a new "
                       "document.", (app,), {name: text}, script, "menus",
                       _all(_tabs(name, "Untitled 1"), _editor_shows(text)))


@TEMPLATES.add("menu_word_wrap", "menus")
def _menu_wrap(rng: random.Random) -> DesktopTask:
    name = _fname(rng)
    text = " ".join(_line(rng, 40) for _ in range(2)) + "\n"

    def script(obs: str) -> Script:
        yield from _menu_then(obs, "Document", "Word Wrap")

    def wrapped(out: Outcome) -> str | None:
        # Wrapped lines need no horizontal scroll bar under the text.
        bars = [n for n in tree_nodes(out.observation) if n.role == "scroll-bar" and n.w > n.h]
        return f"the text still scrolls sideways ({len(bars)} horizontal scroll bar)" if bars else None

    return DesktopTask("menu_word_wrap", f"Turn on word wrap for the long lines of {name} from the Document menu.",
                       ((*EDITOR, name),), {name: text}, script, "menus", wrapped)


@TEMPLATES.add("menu_line_numbers", "menus")
def _menu_lines(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        # The gutter does not show in the tree: the observation after the click is the one
        # before the menu opened.
        obs = yield click(obs, "menu", "View", fallback=keys("alt", "v"))
        yield maybe(click(obs, MENU_ITEMS, "Line Numbers", fallback=press("escape")))

    def numbered(out: Outcome) -> str | None:
        inset = out.probe(_TEXT_INSET).rsplit("\nOutput:\n", 1)[-1].split()
        return None if inset and int(inset[0]) > 10 else f"no line numbers: the text starts {inset} px in"

    return DesktopTask("menu_line_numbers", f"Show line numbers for {name} from the View menu.", (app,),
                       {name: text}, script, "menus", numbered)


@TEMPLATES.add("menu_open_close", "menus")
def _menu_browse(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    menus = rng.sample(["File", "Edit", "Search", "View", "Document", "Help"], 2)

    def script(obs: str) -> Script:
        for m in menus:
            obs = yield click(obs, "menu", m, fallback=keys("alt", m[0].lower()))
            obs = yield press("escape")

    def untouched(out: Outcome) -> str | None:
        if find(out.observation, MENU_ITEMS) is not None:
            return "a menu is still open"
        return None if "Focused: text" in out.observation else "the text lost the focus"

    return DesktopTask("menu_open_close", f"Look through the {' and '.join(menus)} menus of the editor without "
                       "choosing anything.", (app,), {name: text}, script, "menus",
                       _all(untouched, _saved_title(name), _editor_shows(text)))


# -- errors ------------------------------------------------------------------------------

@TEMPLATES.add("program_errors", "errors")
def _errors(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _line(rng, 2)
    mistakes = [
        f"import pyautogui\npyautogui.writ({new!r})",
        f"pyautogui.write({new!r}",
        "import pyautogui\npyautogui.hotkey('ctrl', 'nosuchkey')\nraise RuntimeError('key not sent')",
        "import pyautogui\npyautogui.click(x='left')",
        "import subprocess\nsubprocess.run(['xdotool', 'key', '--bogus'], check=True)",
    ]

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield rng.choice(mistakes)
        yield write(new)
        yield keys("ctrl", "s")

    return DesktopTask("program_errors", f"Add '{new}' at the end of {name} and save (the first try has a bug).",
                       (app,), {name: text}, script, "errors", _file_is(name, text + new))


@TEMPLATES.add("click_missing_node", "errors")
def _missing(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        # The Save dialog is not open: a script looking for its button finds nothing.
        yield click(obs, "push-button", "Save", fallback="raise LookupError(\"no push-button 'Save' on screen\")")
        yield keys("ctrl", "s")

    return DesktopTask("click_missing_node", f"Save {name} (looking for a Save button first).", (app,),
                       {name: text}, script, "errors", _all(_file_is(name, text), _saved_title(name)))


# -- calculator ----------------------------------------------------------------------------

_KEY_GAP = 0.2
"""Seconds between keys typed into the calculator (see :func:`~agentworld.envs.os.task.write`)."""


def _calc_expr(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    op = rng.choice("+-*")
    return f"{a}{op}{b}", str(eval(f"{a}{op}{b}"))  # noqa: S307 - two integers and one operator


# calc_clear with the clearing left out: recorded episodes copied calc_clear's (Jaccard >= 0.9).
@TEMPLATES.add("calc_keyboard", "calculator", family="calc_clear")
def _calc_keys(rng: random.Random) -> DesktopTask:
    expr, result = _calc_expr(rng)

    def script(obs: str) -> Script:
        yield write(expr, _KEY_GAP)
        yield press("enter")

    return DesktopTask("calc_keyboard", f"Compute {expr} in the calculator with the keyboard (answer {result}).",
                       (CALCULATOR,), {}, script, "calculator", _display_is(result))


@TEMPLATES.add("calc_buttons", "calculator")
def _calc_buttons(rng: random.Random) -> DesktopTask:
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    op = rng.choice("+-")

    def script(obs: str) -> Script:
        for label in (str(a), op, str(b), "="):
            obs = yield click(obs, "toggle-button", label, fallback=write(label))

    return DesktopTask("calc_buttons", f"Compute {a} {op} {b} by clicking the calculator's buttons.",
                       (CALCULATOR,), {}, script, "calculator", _display_is(str(a + b if op == "+" else a - b)))


@TEMPLATES.add("calc_clear", "calculator")
def _calc_clear(rng: random.Random) -> DesktopTask:
    expr, _ = _calc_expr(rng)
    expr2, result2 = _calc_expr(rng)

    def script(obs: str) -> Script:
        yield write(expr, _KEY_GAP)
        yield press("escape")
        yield write(expr2, _KEY_GAP)
        yield press("enter")

    return DesktopTask("calc_clear", f"Start typing {expr}, clear the calculator, then compute {expr2}.",
                       (CALCULATOR,), {}, script, "calculator", _display_is(result2))


@TEMPLATES.add("calc_mode_menu", "calculator")
def _calc_mode(rng: random.Random) -> DesktopTask:
    mode = rng.choice(["Scientific Mode", "Paper Mode"])

    def script(obs: str) -> Script:
        obs = yield from _menu_then(obs, "View", mode)
        yield write("7*6", _KEY_GAP)
        yield press("enter")

    def in_mode(out: Outcome) -> str | None:
        obs = out.observation
        if mode == "Scientific Mode":
            if find(obs, "toggle-button", "sin") is None:
                return "no scientific buttons (sin) on screen: not in Scientific Mode"
            return _display_is("42")(out)
        if find(obs, "toggle-button", "7") is not None:
            return "the number buttons are still on screen: not in Paper Mode"
        shown = [n.text or n.name for n in tree_nodes(obs)]
        return None if any("42" in s for s in shown) else "the paper does not show 42"

    return DesktopTask("calc_mode_menu", f"Switch the calculator to {mode} from the View menu and compute 7*6.",
                       (CALCULATOR,), {}, script, "calculator", in_mode)


@TEMPLATES.add("calc_to_editor", "calculator")
def _calc_to_editor(rng: random.Random) -> DesktopTask:
    expr, result = _calc_expr(rng)
    name = _fname(rng)

    text = _doc(rng, 2)

    def script(obs: str) -> Script:
        # The editor covers the calculator's centre: a click there lands in the editor.
        yield activate("^galculator$")
        yield write(expr, _KEY_GAP)
        yield press("enter")
        yield activate("Mousepad$")
        yield keys("ctrl", "end")
        yield write(f"{expr} = {result}\n")
        yield keys("ctrl", "s")

    return DesktopTask("calc_to_editor", f"Compute {expr} in the calculator and write the result into {name}, then save.",
                       ((*EDITOR, name), CALCULATOR), {name: text}, script, "calculator",
                       _all(_display_is(result), _file_is(name, f"{text}{expr} = {result}\n")))


@TEMPLATES.add("switch_windows", "windows")
def _switch(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    n = rng.randint(1, 3)

    typed = _line(rng, 2)

    def script(obs: str) -> Script:
        for _ in range(n):
            # openbox may finish the switch after the next look: the step can read unchanged.
            yield maybe(keys("alt", "tab"))
        # The editor may be active already (an even number of switches).
        yield maybe(activate("Mousepad$"))
        yield write(typed)

    return DesktopTask("switch_windows", f"Switch between the calculator and {name} a few times, then type in the editor.",
                       (app, CALCULATOR), {name: text}, script, "windows",
                       _all(_title(f"*/workspace/{name} - Mousepad"), _editor_shows(typed + text)))


@TEMPLATES.add("xdotool_windows", "windows")
def _xdo_windows(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    w, h = rng.choice([(720, 540), (800, 500), (900, 600)])  # not 640x480, the editor's own size

    def script(obs: str) -> Script:
        yield f"import subprocess\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', 'Mousepad', 'windowsize', '{w}', '{h}'], check=True)"
        yield "import subprocess\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', 'Mousepad', 'windowmove', '100', '80'], check=True)"
        yield "import subprocess\nprint(subprocess.run(['xdotool', 'getactivewindow', 'getwindowname'], capture_output=True, text=True).stdout)"

    title = f"/workspace/{name} - Mousepad"

    def placed(out: Outcome) -> str | None:
        frame = find(out.observation, "frame", title)
        size = re.search(rf"^  \* {re.escape(repr(title))} \(-?\d+, -?\d+\) (\d+)x(\d+)$", out.observation, re.M)
        if frame is None or (frame.x, frame.y) != (100, 80):
            return f"the editor's frame is not at (100, 80): {frame}"
        if size is None or (int(size.group(1)), int(size.group(2))) != (w, h):
            return f"the active editor window is not {w}x{h}"
        return None if f"Output:\n{title}" in out.observation else "the active window's name was not printed"

    return DesktopTask("xdotool_windows", f"Resize the editor window to {w}x{h} and move it with xdotool, then print "
                       "the active window's name.", (app,), {name: text}, script, "windows", placed)
