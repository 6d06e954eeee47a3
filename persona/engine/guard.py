"""The message guard: what the persona model wrote is checked before a word of it is typed to the agent.

A person chatting never types a chat template's tokens, the tool's own markup, or the prompt it was
given. A weak model does all three: it runs on past its turn (`<|im_end|><|im_start|>user ...`), echoes
the `<agent_reply>` blocks it was shown, or copies its profile block with the fact ids. The guard
works on classes of text, not on one model's output:

- **chat-template tokens**: `<|...|>` (ChatML, Llama 3, Phi; DeepSeek's full-width `<｜...｜>`),
  tags with a snake_case name used as tokens (`<start_of_turn>`, `<end_of_turn>`), sentencepiece
  markers (`<s>`, `</s>`, `<bos>`, `<eos>`, `<pad>`, `<unk>`), `<<SYS>>`, bracketed upper-case tokens
  (`[INST]`, `[/INST]`, `[TOOL_RESULTS]`, ...), and one cut off at the end. A token ends the model's
  turn: what follows the first one after some text is another turn the model wrote, and goes, as
  does a turn it opened for another role (`<|im_start|>user ...`); a role name right after a token
  (`user`, `assistant`, `model` ...) goes with it;
- **the tool's own markup**: tags with a snake_case name (`<agent_reply>`, `<tool_response>` ...):
  a block between such a pair is a quote of what the model was shown and goes whole, a lone tag goes;
- **the persona's own prompt repeated**: a line that is a whole line or paragraph of its prompt (the
  system prompt, the messages and tool results it was given, never the agent's replies; a line of
  wrapped prose when it is long), a heading of it even with other numbers or particulars, or a line
  opening with or mostly made of runs of its instructions, as a weak model echoes them with a word
  or a number changed, or runs on into words of its own: 12-word runs of the system prompt, 6-word runs of the tool's own notes (a refusal, a
  nudge, the lines around the profile; not a phase's brief, the author's prose the persona retells,
  nor tool results, which quote facts: those are matched by whole lines only). The benchmark's words
  inside those messages are the persona's material: a fact told word for word, a check asked as
  written, a correction in the words of its `✏️` line are fine, since none of them is a whole line
  there (fact files list `2.1 I'm ...` with the id, which is the file, not the person);
- **text in the shape of the tool's fact files**, even made up: numbered section headings
  (`## 3. Work`) and lines that open with a fact id before a sentence (`3.1 My house ...`). Two or
  more such lines are a listing and go whole; one alone loses its id (`2.1 I live in Lyon` is told
  as `I live in Lyon`). A quantity (`2.5 hours`) is no fact id: an id opens a sentence;
- **a line repeated in a loop** (three times or more), or a unit looping within a line for 30
  characters or more (`2.2.2.2.2...`): kept once; **a message the same as the last two it typed**
  (eight words or more: a model looping across turns) is not typed again.

What is taken out is counted by class (state.quirks, shown in the report). A message that is mostly
such text (half of it or more), or has no words left, is not typed at all: the model is told why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from persona.engine.replies import is_agent_reply
from persona.engine.scenario import PHASE_HEADER

TEMPLATE_TOKENS = "chat-template tokens (`<|im_end|>`, `<start_of_turn>`, `[INST]` …) taken out of a message"
OTHER_TURN = "text after an end-of-turn token (the model writing the next turn) taken out of a message"
TOOL_MARKUP = "the tool's own markup (`<agent_reply>` blocks, tool tags) taken out of a message"
PROMPT_ECHO = "lines repeating the persona's own prompt (headings, fact lines, instructions) taken out"
REPEATED = "lines repeated in a loop taken out of a message"
FACT_LISTING = "lines in the shape of the tool's fact files (`## 3. Work`, `3.1 I …`, fact ids) taken out of a message"
SAME_MESSAGE = "messages the same as the last two typed (a model in a loop across turns) not typed again"
REFUSED = "messages not typed: mostly the tool's own text or markup (the model was told)"

OWN_ROLES = ("assistant", "model", "ai", "bot")  # the persona's own side of the chat template
OTHER_ROLES = ("system", "user", "human", "tool", "ipython", "developer")  # a turn the model wrote for someone else
_ROLE_AFTER_TOKEN = re.compile(rf"\A[ \t]*(?P<role>{'|'.join(OWN_ROLES + OTHER_ROLES)})\b[ \t]*:?[ \t]*\n?",
                               re.IGNORECASE)
_TOKEN = re.compile(
    r"<\|[^<>|\n]{1,40}\|>"                # <|im_end|>, <|eot_id|>, <|start_header_id|>
    r"|<｜[^<>｜\n]{1,40}｜>"                # DeepSeek's full-width bars
    r"|<(?:start|end)_of_[a-z_]+>"         # Gemma's <start_of_turn>, <end_of_turn>, <start_of_image>
    r"|</?(?:s|bos|eos|pad|unk|mask|sep|cls)>"  # sentencepiece and BERT-style markers
    r"|<</?SYS>>"                          # Llama 2
    r"|\[/?[A-Z][A-Z_]{2,}\]"              # [INST], [/INST], [TOOL_RESULTS], [SYSTEM_PROMPT]
    r"|<\|[^<>|\n]{0,40}\Z",               # a token cut off by max_tokens
)
_TAG_NAME = r"[A-Za-z][\w-]*_[\w-]*"  # snake_case: agent_reply, tool_response, function_results
_BLOCK = re.compile(rf"<({_TAG_NAME})(?:\s[^<>]*)?>.*?<\\?/\1>", re.DOTALL)
_TAG = re.compile(rf"<\\?/?{_TAG_NAME}(?:\s[^<>]*)?/?>")
_MATERIAL_LINE = re.compile(r"^\s*(?:\d+\.\d+\.?\s|❓|✏️|➕)")  # a fact, a check, an edit: the persona's to tell
_FACT_ID = re.compile(r"^(\s*)\d+(?:\.\d+)+\.?[ \t]+(?=\S)")  # `3.1 `, `2.1.1.1 ` opening a line
_NUMBERED_HEADING = re.compile(r"^\s*#{1,6}[ \t]*\d+(?:\.\d+)*\.?[ \t]")  # `## 3. Work`, `## 2.1.1 Work`
_STRUCTURE_LINE = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?\s|[-*>•]\s|❓|✏️|➕|\|)")  # a line of its own, never wrapped
LONG_LINE = 8  # words: a line of wrapped prose this long is matched on its own
_WORD = re.compile(r"\w+")
SPAN = 12  # words in a row that make a run of the system prompt
NOTE_SPAN = 6  # of the tool's own text: short notes, words for a model that are no one's chat
LOOP_IN_LINE = re.compile(r"(.{1,20}?)\1{7,}")  # `2.2.2.2.2.2.2.2...`: a unit over and over, on one line
LOOP_CHARS = 30  # a loop in a line this long is degenerate text; `hahahaha!` and `!!!!!!!` are a person's
REPEATS = 3  # a line this many times in one message is a loop
MOSTLY = 0.5  # this share of a message taken out: nothing is typed
SAME_WORDS = 8  # a message this long, typed REPEATS times in a row, is a loop; `Are you there?` is not


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _heading(line: str) -> str | None:
    """A Markdown heading's words before its particulars, without its numbers: `## 2. Work` and `## 3. Work`
    are one heading, and so are `## Current phase (2 of 5): A good week` and `## Current phase: Sunday`."""
    if not line.lstrip().startswith("#"):
        return None
    words = [w for w in _words(re.split(r"[(:`]", line, maxsplit=1)[0]) if not w.isdigit()]
    return " ".join(words) or None


class PromptEcho:
    """What the persona model was given, indexed to tell its own words from a copy of its prompt: the
    system prompt line by line and in runs of words, every other message it was given line by line, and
    the tool's notes (`user` messages that are not the agent's words) in runs of words too. Tool results
    are matched by whole lines only: an edit's result quotes the fact the persona then tells."""

    def __init__(self, system: str = "", messages: Iterable[str | None] = (), notes: Iterable[str | None] = (),
                 typed: Iterable[str | None] = ()):
        self.lines: set[str] = set()
        self.last_typed: list[str] = []  # the words of the last messages typed, REPEATS - 1 of them
        self.headings: set[str] = set()
        self.runs: dict[int, set[int]] = {SPAN: set(), NOTE_SPAN: set()}  # span -> hashes of its runs of words
        self.add(system)
        self._add_runs(system, SPAN)
        for text in messages:
            self.add(text)
        for text in notes:
            self.add(text, note=True)
        for text in typed:
            self.typed(text)

    def typed(self, text: str | None) -> None:
        """A message the persona typed to the agent (its own words: never a copy of the prompt)."""
        if text:
            self.last_typed = [*self.last_typed, " ".join(_words(text))][-(REPEATS - 1):]

    def loops(self, text: str) -> bool:
        key = " ".join(_words(text))
        return (len(key.split()) >= SAME_WORDS and len(self.last_typed) == REPEATS - 1
                and all(k == key for k in self.last_typed))

    def _add_runs(self, instructions: str, span: int) -> None:
        """Runs of the instructions' own lines: not its facts, checks and edits, nor its headings (a fact
        file's section title, `## 2. My work at the hospital`, is the author's words, matched as a heading)."""
        for line in instructions.splitlines():
            if not _MATERIAL_LINE.match(line) and _heading(line) is None:
                words = _words(line)
                self.runs[span].update(hash(tuple(words[i:i + span])) for i in range(len(words) - span + 1))

    def add(self, text: str | None, note: bool = False) -> None:
        """Its headings, its lines of structure (fact lines, checks, list items), its paragraphs whole, and
        the lines of a paragraph long enough to be no one's own words by chance: prose is wrapped
        anywhere, and a short end of a wrapped line may be a fact's very words. A `note` of the tool's
        (a refusal, a nudge, the opening's lines around the profile) is instructions: a paraphrase of it
        is still a copy."""
        if not text or is_agent_reply(text):  # the agent's words are data, not the prompt
            return
        if note:
            self._add_runs(_before_brief(text), NOTE_SPAN)
        paragraph: list[str] = []
        for line in [*text.splitlines(), ""]:
            words = _words(line)
            if heading := _heading(line):
                self.headings.add(heading)
            structure = bool(heading) or bool(_STRUCTURE_LINE.match(line))
            if len(words) >= (3 if structure else LONG_LINE):
                self.lines.add(" ".join(words))
            if words and not structure:
                paragraph += words
                continue
            if len(paragraph) >= 3:
                self.lines.add(" ".join(paragraph))
            paragraph = []

    def echoes(self, line: str) -> bool:
        words = _words(line)
        if not words:
            return False
        heading = _heading(line)
        if heading is not None and heading in self.headings:
            return True
        if len(words) >= 3 and " ".join(words) in self.lines:
            return True
        covered = [False] * len(words)
        for span, runs in self.runs.items():
            for i in range(len(words) - span + 1):
                if hash(tuple(words[i:i + span])) in runs:
                    if i == 0:  # it opens as the instructions do: a copy, however it goes on
                        return True
                    covered[i:i + span] = [True] * span
        return sum(covered) * 2 >= len(words)


@dataclass
class Guarded:
    """What may be typed, what was taken out (class -> times), and why nothing is typed, if so."""

    text: str
    taken: dict[str, int] = field(default_factory=dict)
    refused: str | None = None

    def _took(self, kind: str, n: int = 1) -> None:
        if n:
            self.taken[kind] = self.taken.get(kind, 0) + n

    def quirks(self) -> dict[str, int]:
        return {**self.taken, **({REFUSED: 1} if self.refused else {})}


def guard_message(text: str, prompt: PromptEcho) -> Guarded:
    """`text` (reasoning and tool calls already out) as it may be typed, or refused."""
    out = Guarded(text)
    kept, words = _template_tokens(text, out)
    kept = _tool_markup(kept, out)
    kept = _echo_and_loops(kept, prompt, out)
    kept = _fact_file_shape(kept, out)
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip()
    if not _WORD.search(words):  # tokens and nothing else: a turn with nothing to say, not a refusal
        out.text = ""
        return out
    if prompt.loops(kept):
        out._took(SAME_MESSAGE)
        kept = ""
    share = 1 - len(kept) / len(words)  # of the words written: the tokens themselves are no part of it
    if out.taken and (share >= MOSTLY or not _WORD.search(kept)):
        out.refused = (f"it was {share:.0%} " if share < 1 else "it was all ") + "text a person never types ("
        out.refused += "; ".join(_reason(kind) for kind in out.taken) + ")"
        out.text = ""
        return out
    out.text = kept
    return out


def _template_tokens(text: str, out: Guarded) -> tuple[str, str]:
    """The text up to the first token that follows some text (tokens before it, and role names, out),
    and all the text without its tokens."""
    pieces = _TOKEN.split(text)
    tokens = len(pieces) - 1
    if not tokens:
        return text, text.strip()
    out._took(TEMPLATE_TOKENS, tokens)
    kept, dropped, words = "", 0, []
    for i, piece in enumerate(pieces):
        role = None
        if i > 0 and (named := _ROLE_AFTER_TOKEN.match(piece)):
            role, piece = named.group("role").lower(), piece[named.end():]
        words.append(piece.strip())
        if not piece.strip():
            continue
        if not kept.strip() and role not in OTHER_ROLES:
            kept = piece
        else:
            dropped += 1
    out._took(OTHER_TURN, dropped)
    return kept, "\n".join(w for w in words if w)


def _tool_markup(text: str, out: Guarded) -> str:
    text, blocks = _BLOCK.subn("", text)
    text, tags = _TAG.subn("", text)
    out._took(TOOL_MARKUP, blocks + tags)
    return text


def _echo_and_loops(text: str, prompt: PromptEcho, out: Guarded) -> str:
    kept, seen, echoed, repeated = [], {}, 0, 0
    lines = []
    for line in text.split("\n"):
        line, looped = _loops_in_line(line)
        lines.append(line)
        repeated += looped
    counts: dict[str, int] = {}
    for line in lines:
        key = " ".join(_words(line))
        if key:
            counts[key] = counts.get(key, 0) + 1
    for line in lines:
        key = " ".join(_words(line))
        if key and prompt.echoes(line):
            echoed += 1
            continue
        if key and counts[key] >= REPEATS:
            if key in seen:
                repeated += 1
                continue
            seen[key] = True
        kept.append(line)
    out._took(PROMPT_ECHO, echoed)
    out._took(REPEATED, repeated)
    return "\n".join(kept)


def _loops_in_line(line: str) -> tuple[str, int]:
    """A long run of one unit (a weak model's `1.1.1.1.1...`) kept once; a short one is a person's."""
    loops = 0

    def once(run: re.Match[str]) -> str:
        nonlocal loops
        if len(run.group(0)) < LOOP_CHARS:
            return run.group(0)
        loops += 1
        return run.group(1)

    return LOOP_IN_LINE.sub(once, line), loops


def _fact_id_line(line: str) -> re.Match[str] | None:
    """`3.1 My house ...`: an id, then a sentence (a capital letter); `2.5 hours later` is a quantity."""
    fact = _FACT_ID.match(line)
    return fact if fact and line[fact.end()].isupper() else None


def _fact_file_shape(text: str, out: Guarded) -> str:
    lines = text.split("\n")
    shaped = {i for i, line in enumerate(lines) if _NUMBERED_HEADING.match(line) or _fact_id_line(line)}
    if len(shaped) >= 2 or any(_NUMBERED_HEADING.match(lines[i]) for i in shaped):
        out._took(FACT_LISTING, len(shaped))
        return "\n".join(line for i, line in enumerate(lines) if i not in shaped)
    for i in shaped:  # one line, with an id: the id goes, the sentence is the persona's
        fact = _fact_id_line(lines[i])
        lines[i] = fact.group(1) + lines[i][fact.end():]
        out._took(FACT_LISTING)
    return "\n".join(lines)


def _reason(kind: str) -> str:
    """Why, for the model: in words, never the tokens themselves (a server may read them as real ones)."""
    return {TEMPLATE_TOKENS: "chat-template tokens, the markers that start or end a turn",
            OTHER_TURN: "a next turn written after an end-of-turn marker",
            TOOL_MARKUP: "the tool's own markup, such as the agent_reply tags around the agent's words",
            PROMPT_ECHO: "lines copied from your own instructions, profile or tool results",
            REPEATED: "the same line over and over",
            FACT_LISTING: "lines numbered like your fact files (section headings and fact ids)",
            SAME_MESSAGE: "the very message you sent twice already"}.get(kind, kind)


REFUSAL_START = "(Your last message was not sent to the agent: "


def _before_brief(text: str) -> str:
    """The tool's own text of a message: what comes before a phase's brief (which runs to its end)."""
    return re.split(rf"^{re.escape(PHASE_HEADER)}", text, maxsplit=1, flags=re.MULTILINE)[0]


def refusal_note(guarded: Guarded) -> str:
    """What the model is told when its message was not typed."""
    return (f"{REFUSAL_START}{guarded.refused}. Write only the words the person "
            "would type in the chat, in your own words, in one short message; call tools through the tool interface.)")
