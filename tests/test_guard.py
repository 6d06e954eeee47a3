"""The message guard on variants of what weak models write: every class of text a person never types
is taken out or the message refused, and the persona's own material (facts, checks, corrections, in
its words or word for word) passes untouched."""

from __future__ import annotations

import pytest

from persona.engine.guard import (
    FACT_LISTING,
    OTHER_TURN,
    PROMPT_ECHO,
    REFUSED,
    REPEATED,
    SAME_MESSAGE,
    TEMPLATE_TOKENS,
    TOOL_MARKUP,
    PromptEcho,
    guard_message,
    refusal_note,
)
from persona.engine.replies import wrap_reply

SYSTEM = ("# Who you are\n\nYou play a real person chatting with an AI assistant (the *agent*) through its chat window. "
          "Stay in character for the whole conversation; never mention that you are testing.\n\n# Your scenario\n\n"
          "You are Maya, 34, a nurse in Lyon. Write short, friendly messages.")
OPENING = ("# Your profile (fact file `profile`)\n\n# Profile\n\n## 1. My work at the hospital in Lyon\n1.1 I'm Maya, 34 years old\n"
           "1.2 I work as a nurse at the Lyon university hospital since 2019\n\n## 2. Home\n2.1 I live in Lyon\n"
           "Fact files you can load with facts_read: `family` (Family, 4 facts).\n\n"
           "## Current phase (2 of 5): A good week\n\nGood news and a correction.\n"
           "✏️ running 1.3: Correction: on my long run last Sunday I ran 14 km, not 12\n"
           "❓ e1 [single] Which days of the week do I run? Correct answer: Tuesday; Sunday\n")
RESULT = "Marked 2 as told; 3 untold left in family."
EDITED = "running 1.4 is now: My sister and I run together along the Rhône every Sunday morning"


@pytest.fixture
def prompt() -> PromptEcho:
    return PromptEcho(SYSTEM, [RESULT, EDITED], notes=[OPENING, wrap_reply("Hello Maya! Tell me about your week.")])


@pytest.mark.parametrize("text, typed", [
    ("Hi! I'm Maya.<|im_end|>", "Hi! I'm Maya."),  # ChatML
    ("<|im_start|>assistant\nHi! I'm Maya.<|im_end|>\n", "Hi! I'm Maya."),
    ("<|start_header_id|>assistant<|end_header_id|>\n\nHi! I'm Maya.<|eot_id|>", "Hi! I'm Maya."),  # Llama 3
    ("<start_of_turn>model\nHi! I'm Maya.<end_of_turn>", "Hi! I'm Maya."),  # Gemma
    ("[INST] Hi! I'm Maya. [/INST]", "Hi! I'm Maya."),  # Mistral, Llama 2
    ("<s>Hi! I'm Maya.</s>", "Hi! I'm Maya."),  # sentencepiece markers
    ("<｜Assistant｜>Hi! I'm Maya.<｜end▁of▁sentence｜>", "Hi! I'm Maya."),  # DeepSeek's full-width bars
    ("<|assistant|>\nHi! I'm Maya.<|end|>", "Hi! I'm Maya."),  # Phi
    ("Hi! I'm Maya, and I love long runs on Sundays by the river.<|im_end|>\n<|im_s", None),  # cut off mid-token
], ids=["chatml", "chatml-role", "llama3", "gemma", "inst", "sentencepiece", "deepseek", "phi", "cut-token"])
def test_chat_template_tokens_never_reach_the_agent(text, typed, prompt):
    guarded = guard_message(text, prompt)
    assert guarded.text == (typed or text.split("<|im_end|>")[0]) and not guarded.refused
    assert guarded.taken[TEMPLATE_TOKENS] >= 1


def test_a_turn_written_for_the_other_side_is_not_typed(prompt):
    guarded = guard_message("Hi!<|im_end|>\n<|im_start|>user\nNice to meet you, Maya! What do you do for a living?"
                            "<|im_end|>\n<|im_start|>assistant\nI'm a nurse.", prompt)
    assert guarded.refused and guarded.text == "" and guarded.taken[OTHER_TURN] == 2
    short = guard_message("Hi, I'm Maya, a nurse from Lyon, how are you today?<|im_end|>\n<|im_start|>user\nFine.", prompt)
    assert short.text == "Hi, I'm Maya, a nurse from Lyon, how are you today?" and short.taken[OTHER_TURN] == 1


def test_the_tools_own_markup_goes_a_block_whole(prompt):
    echoed = wrap_reply("Hello Maya! Tell me about your week.")
    assert guard_message(f"{echoed}\nIt was great, thanks! I ran 14 km on Sunday and felt strong all the way.",
                         prompt).text == "It was great, thanks! I ran 14 km on Sunday and felt strong all the way."
    escaped = guard_message("<agent_reply>I said <\\/agent_reply> hi</agent_reply>", prompt)
    assert escaped.refused and escaped.taken[TOOL_MARKUP] == 2, "an escaped closing tag ends nothing early"
    assert guard_message("Sure!</tool_response> I ran 14 km.", prompt).text == "Sure! I ran 14 km."


def test_a_copy_of_the_persona_prompt_is_refused_and_the_model_told_why(prompt):
    copied = guard_message(OPENING, prompt)
    assert copied.refused and copied.text == "" and copied.taken[PROMPT_ECHO] >= 8
    assert REFUSED in copied.quirks()
    note = refusal_note(copied)
    assert note.startswith("(Your last message was not sent to the agent: it was all text a person never types")
    assert "copied from your own instructions, profile or tool results" in note
    tokens = refusal_note(guard_message("<|im_start|>user\nMore?<|im_end|><agent_reply>x</agent_reply>", prompt))
    assert "chat-template tokens" in tokens and not any(t in tokens for t in ("<|", "[INST]", "<agent_reply>")), \
        "the model is told in words: a server may read a token in a message as a real one"
    renumbered = guard_message("## 7. My work at the hospital in Lyon\nBy the way, my long run on Sunday was 14 km, "
                               "not 12, sorry!", prompt)
    assert renumbered.text == "By the way, my long run on Sunday was 14 km, not 12, sorry!", "a heading, other numbers"
    assert renumbered.taken == {PROMPT_ECHO: 1}
    for heading in ("# Your profile", "## Current phase (3 of 5): Sunday", "### Current phase: Monday"):
        other = guard_message(f"{heading}\nBy the way, my long run on Sunday was 14 km, not 12, sorry!", prompt)
        assert other.text.startswith("By the way") and other.taken[PROMPT_ECHO] == 1, "a heading, other particulars"
    instructions = guard_message("You play a real person chatting with an AI assistant (the agent) through its chat "
                                 "window. Hi!", prompt)
    assert instructions.refused and instructions.taken[PROMPT_ECHO] == 1
    assert guard_message(RESULT, prompt).refused, "a tool result is the prompt too"


@pytest.mark.parametrize("text", [
    "I'm Maya, 34 years old",  # a fact told word for word
    "I work as a nurse at the Lyon university hospital since 2019",
    "Correction: on my long run last Sunday I ran 14 km, not 12",  # a ✏️ line's words
    "Which days of the week do I run?",  # a check asked as written
    "Hello Maya! Tell me about your week.",  # the agent's words are no prompt
    "I'm a nurse in Lyon, 34, and I like to write short, friendly messages.",
    "My sister and I run together along the Rhône every Sunday morning, rain or shine!",
    "My work at the hospital in Lyon is exhausting this month, so many night shifts.",
], ids=["fact", "long fact", "correction", "check", "agent's words", "instructions, paraphrased", "edited fact",
        "a section title's words"])
def test_the_personas_own_material_passes_untouched(text, prompt):
    assert guard_message(text, prompt).text == text and not guard_message(text, prompt).taken


def test_a_line_in_a_loop_is_kept_once(prompt):
    looped = guard_message("Hello there!\n" + "2.1 I'm a data analyst\n" * 46 + "How are you?", prompt)
    assert looped.refused and looped.taken[REPEATED] == 45
    once = guard_message("Ha!\nHa!\nHa!\nAnyway, I ran 14 km on Sunday with my sister and it was a really lovely day.",
                         prompt)
    assert once.text == "Ha!\nAnyway, I ran 14 km on Sunday with my sister and it was a really lovely day."


def test_a_unit_looping_within_a_line_is_kept_once(prompt):
    """CI met `2.1.1.1.1.1.1.1.2.1.2.2.2.2.2...` for 128 tokens, typed 15 times: a loop in a line is a
    loop; a person's `hahahaha` or `!!!!!!` is short."""
    degenerate = guard_message("2.1.1.1.1.1.1.1.2.1.2" + ".2" * 60 + ".", prompt)
    assert degenerate.refused and degenerate.taken[REPEATED] == 1
    own = "Hahahaha!!!!!! Sooooo good, I ran 14 km on Sunday and my legs are still shaking today, honestly."
    assert guard_message(own, prompt).text == own
    long = "I ran " + "and ran " * 10 + "until I could not anymore, on Sunday by the river with my sister, all the way."
    assert guard_message(long, prompt).text == "I ran and ran until I could not anymore, on Sunday by the river with my " \
                                               "sister, all the way."


def test_only_tokens_is_an_empty_turn_not_a_refusal(prompt):
    guarded = guard_message("<|eot_id|>", prompt)
    assert guarded.text == "" and guarded.refused is None and guarded.taken == {TEMPLATE_TOKENS: 1}


def test_wrapped_prose_is_matched_by_paragraph_and_by_its_long_lines():
    """A phase brief wraps its prose anywhere: its short last line may be a fact's very words (marathon-en's
    dry run met 'today is Saturday, 14 June 2025.'), which the persona tells; a long line, or the whole
    paragraph, copied, is an echo."""
    brief = ("## Current phase (1 of 31): Morning\n\nYou wake up early and make coffee; remember that\n"
             "today is Saturday, 14 June 2025.\n")
    prompt = PromptEcho(SYSTEM, [brief])
    assert guard_message("Today is Saturday, 14 June 2025.", prompt).text == "Today is Saturday, 14 June 2025."
    assert guard_message("You wake up early and make coffee; remember that today is Saturday, 14 June 2025.",
                         prompt).refused, "the whole paragraph, on one line"
    own = "Oh, hi! I just woke up and I'm making coffee, how are you this fine morning?"
    assert guard_message(f"You wake up early and make coffee; remember that\n{own}", prompt).text == own


def test_a_made_up_fact_file_is_a_listing_and_goes_whole(prompt):
    """Gemma 3 270M, capped at 128 tokens, wrote its own profile: new headings, new ids, none of them the
    prompt's lines (CI met it: `## 3. Why I have to work there\n3.1 My house ...`)."""
    invented = ("## 3. Why I have to work there\n3.1 My house is far from the station\n3.2 My boss likes me\n"
                "## 4. What's wrong with her house\n4.1 What's wrong with her house?\n4.9 What")
    guarded = guard_message(invented, prompt)
    assert guarded.refused and guarded.text == "" and guarded.taken[FACT_LISTING] == 6
    own = "Hi! Such a busy week at the hospital, three night shifts in a row and then a long run on Sunday."
    deeper = guard_message("## 2.1.1 I like this person\n2.1.1.1 I am very friendly\n2.1.1.2 I have a soft spot", prompt)
    assert deeper.refused and deeper.taken[FACT_LISTING] == 3, "ids of any depth"
    mixed = guard_message(f"{own}\n5.1 I'm a data analyst\n5.2 I'm a data analyst", prompt)
    assert mixed.text == own and mixed.taken[FACT_LISTING] == 2
    assert "numbered like your fact files" in refusal_note(guarded)


@pytest.mark.parametrize("text, typed", [
    ("2.1 I live in Lyon, by the river", "I live in Lyon, by the river"),  # a fact id: the file's, not hers
    ("  7.3. My sister visits in May", "My sister visits in May"),  # one it made up
    ("2.5 hours on the train today, ugh.", "2.5 hours on the train today, ugh."),  # a quantity
    ("1. I ran on Tuesday\n2. I ran on Sunday", "1. I ran on Tuesday\n2. I ran on Sunday"),  # a person's list
], ids=["fact id", "made-up id", "quantity", "numbered list"])
def test_one_line_loses_only_its_fact_id(text, typed, prompt):
    guarded = guard_message(text, prompt)
    assert guarded.text == typed and not guarded.refused
    assert (FACT_LISTING in guarded.taken) == (typed != text)


def test_the_tools_own_text_echoed_with_a_word_changed_is_still_a_copy(prompt):
    """CI met Gemma 3 270M sending our refusal note back, 'tool's' turned into 'agent's' and 99% into 110%:
    a line mostly made of 6-word runs of the tool's own text is that text."""
    note = refusal_note(guard_message(OPENING, prompt))
    prompt.add(note, note=True)
    paraphrase = (note.replace("all text", "110% text").replace("instructions", "orders"))
    assert paraphrase != note and guard_message(paraphrase, prompt).refused
    ran_on = note[:90] + "; the line below the agent's instructions; the agent's own instructions" * 6
    assert guard_message(ran_on, prompt).refused, "it opens as the note does, then runs on in words of its own"
    nudge = "(Your last turn was empty. Write your next message to the agent, or call a tool.)"
    prompt.add(nudge, note=True)
    assert guard_message("(Your last turn was not yet deleted. Write your next message to the agent, or call a tool.)",
                         prompt).refused, "a short note, with words changed: runs of 6 words"
    assert guard_message("Fact files you can load with facts_read: `work` (Work, 3 facts).", prompt).refused, \
        "the lines around the profile are the tool's too"
    brief = "Good news and a correction: I ran 14 km on Sunday, not 12!"
    assert guard_message(brief, prompt).text == brief, "a phase's brief is the author's prose, told in its words"
    own = "Sorry about that! I'm Maya, a nurse in Lyon, and I ran 14 km on Sunday."
    assert guard_message(own, prompt).text == own, "the persona's own words after a note pass"


def test_the_same_message_a_third_time_in_a_row_is_not_typed(prompt):
    """CI met Gemma 3 270M typing one made-up paragraph 15 times: twice is a person's (a question
    asked again), a third time in a row is a loop; a short one is never one."""
    story = "I'm on a bus with a friend, wearing a red scarf, and we talk about the weather."
    for _ in range(2):
        assert guard_message(story, prompt).text == story
        prompt.typed(story)
    third = guard_message(story, prompt)
    assert third.refused and third.taken == {SAME_MESSAGE: 1}
    assert "the very message you sent twice already" in refusal_note(third)
    assert guard_message(story + " Brr!", prompt).text == story + " Brr!", "a different message"
    for _ in range(3):
        prompt.typed("Are you there?")
    assert guard_message("Are you there?", prompt).text == "Are you there?"
