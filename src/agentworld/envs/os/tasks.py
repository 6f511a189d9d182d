"""Seeded desktop task templates: editing, saving, dialogs, menus, a calculator, errors.

Each template draws its file names, contents and inputs from the seed and scripts the
way through with what a user of the real applications does: shortcuts, menus opened
and items clicked at the centre the accessibility tree gives (read from the latest
observation, like an agent), dialogs answered, and the usual mistakes (a typo in the
program, a key pyautogui does not know, a node that is not on screen).
"""

from __future__ import annotations

import random

from agentworld.envs.os.task import CALCULATOR, EDITOR, DesktopTask, Script, click, keys, press, write
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
    yield keys("ctrl", "a")
    yield write(name)
    yield press("enter")


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
                       (app,), {name: text}, script, "editing")


@TEMPLATES.add("insert_heading", "editing")
def _insert_heading(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    head = f"# {rng.choice(_WORDS).title()} {rng.randint(1, 9)}"

    def script(obs: str) -> Script:
        yield keys("ctrl", "home")
        yield write(head + "\n\n")
        yield keys("ctrl", "s")

    return DesktopTask("insert_heading", f"Insert the heading '{head}' and a blank line at the top of {name}, then save.",
                       (app,), {name: text}, script, "editing")


@TEMPLATES.add("replace_content", "editing")
def _replace_content(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _doc(rng, 2)

    def script(obs: str) -> Script:
        yield keys("ctrl", "a")
        yield write(new)
        yield keys("ctrl", "s")

    return DesktopTask("replace_content", f"Replace everything in {name} with new text and save it.",
                       (app,), {name: text}, script, "editing")


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
                       (app,), {name: text}, script, "editing")


@TEMPLATES.add("delete_first_line", "editing")
def _delete_first_line(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield keys("ctrl", "home")
        yield keys("shift", "down")
        yield press("delete")
        yield keys("ctrl", "s")

    return DesktopTask("delete_first_line", f"Delete the first line of {name} and save.", (app,), {name: text},
                       script, "editing")


@TEMPLATES.add("type_list", "editing")
def _type_list(rng: random.Random) -> DesktopTask:
    items = [rng.choice(_WORDS) for _ in range(rng.randint(2, 4))]
    name = _fname(rng)

    def script(obs: str) -> Script:
        for i, item in enumerate(items, 1):
            yield write(f"{i}. {item}\n")
        yield keys("ctrl", "s")
        yield from _save_dialog(name)

    return DesktopTask("type_list", f"Type a numbered list of {', '.join(items)} in a new document and save it "
                       f"as {name}.", (EDITOR,), {}, script, "editing")


@TEMPLATES.add("xdotool_type", "editing")
def _xdotool_type(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    new = _line(rng, 3)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield f"import subprocess\nsubprocess.run(['xdotool', 'type', '--delay', '20', {new!r}], check=True)"
        yield "import subprocess\nsubprocess.run(['xdotool', 'key', 'ctrl+s'], check=True)"

    return DesktopTask("xdotool_type", f"Use xdotool to type '{new}' at the end of {name}, then save with ctrl+s.",
                       (app,), {name: text}, script, "editing")


@TEMPLATES.add("copy_first_line", "editing")
def _duplicate_line(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield keys("ctrl", "home")
        yield keys("shift", "end")
        yield keys("ctrl", "c")
        yield keys("ctrl", "end")
        yield keys("ctrl", "v")
        yield keys("ctrl", "s")

    return DesktopTask("copy_first_line", f"Copy the first line of {name} to the end of the file and save.",
                       (app,), {name: text}, script, "editing")


# -- saving and dialogs -----------------------------------------------------------------

@TEMPLATES.add("save_new_document", "saving")
def _save_new(rng: random.Random) -> DesktopTask:
    name, body = _fname(rng), _line(rng)

    def script(obs: str) -> Script:
        yield write(body)
        yield keys("ctrl", "s")
        yield from _save_dialog(name)

    return DesktopTask("save_new_document", f"Write '{body}' in a new document and save it as {name}.",
                       (EDITOR,), {}, script, "saving")


@TEMPLATES.add("save_as_copy", "saving")
def _save_as(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    copy = _fname(rng, ".bak")

    def script(obs: str) -> Script:
        yield keys("ctrl", "shift", "s")
        yield from _save_dialog(copy)

    return DesktopTask("save_as_copy", f"Save {name} under the new name {copy} with Save As.", (app,), {name: text},
                       script, "saving")


@TEMPLATES.add("save_as_overwrite", "dialogs")
def _overwrite(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    other = _fname(rng, ".md")

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(_line(rng, 2))
        obs = yield keys("ctrl", "shift", "s")
        yield keys("ctrl", "a")
        yield write(other)
        obs = yield press("enter")
        yield click(obs, "push-button", "Replace", fallback=press("enter"))

    return DesktopTask("save_as_overwrite", f"Save the edited {name} over the existing file {other}, confirming "
                       "the replacement.", (app,), {name: text, other: _doc(rng, 2)}, script, "dialogs")


@TEMPLATES.add("close_discard", "dialogs")
def _close_discard(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield write(_line(rng, 2))
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Don't Save", fallback=press("escape"))

    return DesktopTask("close_discard", f"Type in {name}, then close the document without saving the change.",
                       (app,), {name: text}, script, "dialogs")


@TEMPLATES.add("close_cancel", "dialogs")
def _close_cancel(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(_line(rng, 2))
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Cancel", fallback=press("escape"))
        yield keys("ctrl", "s")

    return DesktopTask("close_cancel", f"Edit {name}, start closing it, cancel the close, then save.",
                       (app,), {name: text}, script, "dialogs")


@TEMPLATES.add("close_and_save", "dialogs")
def _quit_save(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield keys("ctrl", "end")
        yield write(_line(rng, 3) + "\n")
        obs = yield keys("ctrl", "w")
        yield click(obs, "push-button", "Save", fallback=press("enter"))

    return DesktopTask("close_and_save", f"Add a line to {name} and close it, saving when asked.", (app,),
                       {name: text}, script, "dialogs")


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
                       "Find and Replace dialog, then save.", ((*EDITOR, name),), {name: text}, script, "dialogs")


@TEMPLATES.add("goto_line_dialog", "dialogs")
def _goto_line(rng: random.Random) -> DesktopTask:
    name = _fname(rng)
    text = _doc(rng, rng.randint(5, 8))
    line = rng.randint(2, 4)
    mark = f"TODO({rng.choice(_WORDS)})"

    def script(obs: str) -> Script:
        yield keys("ctrl", "l")
        yield keys("ctrl", "a")
        yield write(str(line))
        yield press("enter")
        yield write(mark + " ")
        yield keys("ctrl", "s")

    return DesktopTask("goto_line_dialog", f"Go to line {line} of {name} with Go To Line, type '{mark}' there and save.",
                       ((*EDITOR, name),), {name: text}, script, "dialogs")


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

    return DesktopTask("open_file_dialog", f"Open {other} from the Open dialog and move to its end.",
                       ((*EDITOR, first),), files, script, "dialogs")


@TEMPLATES.add("find_bar", "dialogs")
def _find_bar(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    word = text.split()[rng.randrange(len(text.split()))]

    def script(obs: str) -> Script:
        yield keys("ctrl", "f")
        yield write(word)
        yield press("enter")
        yield press("escape")

    return DesktopTask("find_bar", f"Search {name} for '{word}' with the find bar.", (app,), {name: text}, script,
                       "dialogs")


# -- menus -----------------------------------------------------------------------------

@TEMPLATES.add("menu_new_tab", "menus")
def _menu_new(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    body = _line(rng, 3)

    def script(obs: str) -> Script:
        obs = yield from _menu_then(obs, "File", "New")
        yield write(body)

    return DesktopTask("menu_new_tab", f"Open a new document from the File menu and type '{body}'.", (app,),
                       {name: text}, script, "menus")


def _menu_then(obs: str, menu: str, item: str) -> Script:
    """Like :func:`_menu`, returning the observation after the item was clicked."""
    obs = yield click(obs, "menu", menu, fallback=keys("alt", menu[0].lower()))
    after = yield click(obs, "menu-item", item, fallback=press("escape"))
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
                       "document.", (app,), {name: text}, script, "menus")


@TEMPLATES.add("menu_word_wrap", "menus")
def _menu_wrap(rng: random.Random) -> DesktopTask:
    name = _fname(rng)
    text = " ".join(_line(rng, 40) for _ in range(2)) + "\n"

    def script(obs: str) -> Script:
        yield from _menu_then(obs, "View", "Word Wrap")

    return DesktopTask("menu_word_wrap", f"Turn on word wrap for the long lines of {name} from the View menu.",
                       ((*EDITOR, name),), {name: text}, script, "menus")


@TEMPLATES.add("menu_line_numbers", "menus")
def _menu_lines(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        yield from _menu_then(obs, "View", "Line Numbers")

    return DesktopTask("menu_line_numbers", f"Show line numbers for {name} from the View menu.", (app,),
                       {name: text}, script, "menus")


@TEMPLATES.add("menu_open_close", "menus")
def _menu_browse(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    menus = rng.sample(["File", "Edit", "Search", "View", "Document", "Help"], 2)

    def script(obs: str) -> Script:
        for m in menus:
            obs = yield click(obs, "menu", m, fallback=keys("alt", m[0].lower()))
            obs = yield press("escape")

    return DesktopTask("menu_open_close", f"Look through the {' and '.join(menus)} menus of the editor without "
                       "choosing anything.", (app,), {name: text}, script, "menus")


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
                       (app,), {name: text}, script, "errors")


@TEMPLATES.add("click_missing_node", "errors")
def _missing(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)

    def script(obs: str) -> Script:
        # The Save dialog is not open: a script looking for its button finds nothing.
        yield click(obs, "push-button", "Save", fallback="raise LookupError(\"no push-button 'Save' on screen\")")
        yield keys("ctrl", "s")

    return DesktopTask("click_missing_node", f"Save {name} (looking for a Save button first).", (app,),
                       {name: text}, script, "errors")


# -- calculator ----------------------------------------------------------------------------

def _calc_expr(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    op = rng.choice("+-*")
    return f"{a}{op}{b}", str(eval(f"{a}{op}{b}"))  # noqa: S307 - two integers and one operator


@TEMPLATES.add("calc_keyboard", "calculator")
def _calc_keys(rng: random.Random) -> DesktopTask:
    expr, result = _calc_expr(rng)

    def script(obs: str) -> Script:
        yield write(expr)
        yield press("enter")

    return DesktopTask("calc_keyboard", f"Compute {expr} in the calculator with the keyboard (answer {result}).",
                       (CALCULATOR,), {}, script, "calculator")


@TEMPLATES.add("calc_buttons", "calculator")
def _calc_buttons(rng: random.Random) -> DesktopTask:
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    op = rng.choice("+-")

    def script(obs: str) -> Script:
        for label in (str(a), op, str(b), "="):
            obs = yield click(obs, "toggle-button", label, fallback=write(label))

    return DesktopTask("calc_buttons", f"Compute {a} {op} {b} by clicking the calculator's buttons.",
                       (CALCULATOR,), {}, script, "calculator")


@TEMPLATES.add("calc_clear", "calculator")
def _calc_clear(rng: random.Random) -> DesktopTask:
    expr, _ = _calc_expr(rng)
    expr2, _ = _calc_expr(rng)

    def script(obs: str) -> Script:
        yield write(expr)
        yield press("escape")
        yield write(expr2)
        yield press("enter")

    return DesktopTask("calc_clear", f"Start typing {expr}, clear the calculator, then compute {expr2}.",
                       (CALCULATOR,), {}, script, "calculator")


@TEMPLATES.add("calc_mode_menu", "calculator")
def _calc_mode(rng: random.Random) -> DesktopTask:
    mode = rng.choice(["Scientific Mode", "Paper Mode"])

    def script(obs: str) -> Script:
        obs = yield from _menu_then(obs, "View", mode)
        yield write("7*6")
        yield press("enter")

    return DesktopTask("calc_mode_menu", f"Switch the calculator to {mode} from the View menu and compute 7*6.",
                       (CALCULATOR,), {}, script, "calculator")


@TEMPLATES.add("calc_to_editor", "calculator")
def _calc_to_editor(rng: random.Random) -> DesktopTask:
    expr, result = _calc_expr(rng)
    name = _fname(rng)

    def script(obs: str) -> Script:
        obs = yield click(obs, "frame", contains="galculator", fallback=keys("alt", "tab"))
        yield write(expr)
        obs = yield press("enter")
        obs = yield click(obs, "frame", contains="Mousepad", fallback=keys("alt", "tab"))
        yield keys("ctrl", "end")
        yield write(f"{expr} = {result}\n")
        yield keys("ctrl", "s")

    return DesktopTask("calc_to_editor", f"Compute {expr} in the calculator and write the result into {name}, then save.",
                       ((*EDITOR, name), CALCULATOR), {name: _doc(rng, 2)}, script, "calculator")


@TEMPLATES.add("switch_windows", "windows")
def _switch(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    n = rng.randint(1, 3)

    def script(obs: str) -> Script:
        for _ in range(n):
            yield keys("alt", "tab")
        yield "import subprocess\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', 'Mousepad', 'windowactivate'], check=True)"
        yield write(_line(rng, 2))

    return DesktopTask("switch_windows", f"Switch between the calculator and {name} a few times, then type in the editor.",
                       (app, CALCULATOR), {name: text}, script, "windows")


@TEMPLATES.add("xdotool_windows", "windows")
def _xdo_windows(rng: random.Random) -> DesktopTask:
    name, text, app = _editor(rng)
    w, h = rng.choice([(640, 480), (800, 500), (900, 600)])

    def script(obs: str) -> Script:
        yield f"import subprocess\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', 'Mousepad', 'windowsize', '{w}', '{h}'], check=True)"
        yield "import subprocess\nsubprocess.run(['xdotool', 'search', '--onlyvisible', '--name', 'Mousepad', 'windowmove', '100', '80'], check=True)"
        yield "import subprocess\nprint(subprocess.run(['xdotool', 'getactivewindow', 'getwindowname'], capture_output=True, text=True).stdout)"

    return DesktopTask("xdotool_windows", f"Resize the editor window to {w}x{h} and move it with xdotool, then print "
                       "the active window's name.", (app,), {name: text}, script, "windows")
