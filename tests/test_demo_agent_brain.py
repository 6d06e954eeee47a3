"""DemoMind's memory rules: notes vs context, recall ranking, compaction, persistence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo_agent.brain import NOTICE_TEXT, Brain, Reply
from demo_agent.text import (
    content_stems,
    is_question,
    is_search_request,
    looks_important,
    stem,
    tokens,
)

# ---- pure text rules ---------------------------------------------------------------------


def test_tokens_and_stems() -> None:
    assert tokens("My sister's cat, Pixel, is 3!") == ["my", "sister", "cat", "pixel", "is", "3"]
    assert stem("sisters") == "siste"
    assert content_stems("What is my sister's name?") == {"siste"}
    # Russian: stopwords dropped, ё folded to е, 5-char stems.
    assert content_stems("Как зовут мою сестру?") == {"зовут", "сестр"}
    assert content_stems("Ёжик") == content_stems("ежик")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is my salary?", True),
        ('She asked "why?"  ', True),
        ("Как зовут мою сестру?", True),
        ("I earn 4000 EUR.", False),
        ("Is it true? I doubt it.", False),
    ],
)
def test_is_question(text: str, expected: bool) -> None:
    assert is_question(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My salary is 4000 EUR a month.", True),  # digit
        ("My sister is called Anya.", True),  # a name mid-sentence
        ("Yesterday I went for a run.", False),  # "I" is not a name
        ("Tea is great. Coffee is not.", False),  # capitalised words are sentence-first only
        ("I like green tea.", False),
        ("Мою сестру зовут Аня.", True),
        ("я люблю зелёный чай", False),
    ],
)
def test_looks_important(text: str, expected: bool) -> None:
    assert looks_important(text) is expected


def test_search_request_detection() -> None:
    assert is_search_request("Please SEARCH YOUR MEMORY once more.")
    assert is_search_request("Поищи в памяти, пожалуйста")
    assert not is_search_request("I searched the attic.")


# ---- brain behaviour ---------------------------------------------------------------------


def test_statements_become_notes_by_the_rule() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "My sister Anya studies medicine.")
    brain.reply(conv, "I love green tea in the morning.")
    brain.reply(conv, "I run 12 km every Sunday.")
    brain.reply(conv, "Where does Anya study?")  # questions are never notes
    assert brain.notes() == ["My sister Anya studies medicine.", "I run 12 km every Sunday."]


def test_statement_gets_one_rotating_acknowledgement() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    acks = [brain.reply(conv, f"fact number {i}").bubbles for i in range(5)]
    assert all(len(a) == 1 for a in acks)
    assert acks[0] == ["Got it, I'll remember that."]
    assert len({a[0] for a in acks[:4]}) == 4 and acks[4] == acks[0]


def test_question_answered_from_context() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "I love green tea in the morning.")  # not a note, only context
    reply = brain.reply(conv, "What do I love in the morning?")
    assert reply == Reply(bubbles=["You told me: I love green tea in the morning."], compacted=False)


def test_new_conversation_keeps_notes_and_forgets_context() -> None:
    brain = Brain()
    first = brain.new_conversation()
    brain.reply(first, "My dog Rex is 7 years old.")
    brain.reply(first, "I love green tea in the morning.")
    second = brain.new_conversation()
    assert brain.reply(second, "How old is my dog?").bubbles == [
        "You told me: My dog Rex is 7 years old."
    ]
    assert brain.reply(second, "What do I love in the morning?").bubbles == [
        "I don't think you told me that."
    ]


def test_newer_conflicting_statement_comes_first() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "My salary is 3000 EUR a month.")
    brain.reply(conv, "I got a raise: my salary is 4000 EUR a month.")
    reply = brain.reply(conv, "What is my salary?")
    assert reply.bubbles == [
        "You told me: I got a raise: my salary is 4000 EUR a month.",
        "Also: My salary is 3000 EUR a month.",
    ]


def test_at_most_three_bubbles_best_overlap_first() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "I ran the Batumi marathon in 2024.")
    brain.reply(conv, "The Tbilisi marathon was hard.")
    brain.reply(conv, "My friend Gia runs marathons.")
    brain.reply(conv, "Marathons are long.")
    reply = brain.reply(conv, "Which marathon did I run in Batumi?")
    # Only the Batumi statement shares two stems ("marat", "batum") with the question.
    assert reply.bubbles == ["You told me: I ran the Batumi marathon in 2024."]
    many = brain.reply(conv, "Tell me about marathons?")  # one content word: threshold 1
    assert many.bubbles == [
        "You told me: Marathons are long.",  # all tie on overlap: newest first
        "Also: My friend Gia runs marathons.",
        "Also: The Tbilisi marathon was hard.",
    ]


def test_search_your_memory_lowers_the_threshold() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "My sister Anya is 24.")
    assert brain.reply(conv, "How old is Anya?").bubbles == ["I don't think you told me that."]
    again = brain.reply(conv, "Could you search your memory?")
    assert again.bubbles == ["You told me: My sister Anya is 24."]
    # The request itself is not a statement worth remembering.
    assert brain.notes() == ["My sister Anya is 24."]


def test_search_without_a_match_says_so() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "What is my blood type?")
    assert brain.reply(conv, "Look again.").bubbles == [
        "I searched my memory, but I don't think you told me that."
    ]


def test_compaction_triggers_past_context_messages() -> None:
    brain = Brain(context_messages=6)
    conv = brain.new_conversation()
    brain.reply(conv, "i like green tea")  # context-only fact, will be compacted away
    replies = [brain.reply(conv, f"statement {i}") for i in range(3)]
    # 4 exchanges = 8 messages; the 4th user message is the 7th context message.
    assert [r.compacted for r in replies] == [False, False, True]
    history = brain.history(conv)
    notices = [m for m in history if m["kind"] == "notice"]
    assert notices == [{"role": "system", "text": NOTICE_TEXT, "kind": "notice"}]
    assert history.index(notices[0]) == 7  # after the user message, before the reply
    assert len(history) == 9  # the UI still shows everything
    assert len(brain.context(conv)) == 5
    assert brain.reply(conv, "What kind of tea do I like?").bubbles == [
        "I don't think you told me that."
    ]


def test_russian_question_and_answer() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    assert brain.reply(conv, "Мою сестру зовут Аня.").bubbles == ["Понял, запомню."]
    brain.reply(conv, "Моя сестра учится в Тбилиси.")
    reply = brain.reply(conv, "Как зовут мою сестру?")
    assert reply.bubbles == ["Ты говорил(а): Мою сестру зовут Аня."]
    assert brain.reply(conv, "Какая у меня группа крови?").bubbles == [
        "Кажется, ты мне этого не говорил(а)."
    ]


def test_forced_language() -> None:
    brain = Brain(language="ru")
    conv = brain.new_conversation()
    assert brain.reply(conv, "What is my blood type?").bubbles == [
        "Кажется, ты мне этого не говорил(а)."
    ]


def test_persistence_restores_conversations_and_notes(tmp_path: Path) -> None:
    brain = Brain(tmp_path)
    conv = brain.new_conversation()
    brain.reply(conv, "I love green tea in the morning.")
    brain.reply(conv, "My dog Rex is 7.")
    state = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    assert conv in state["conversations"]
    assert not list(tmp_path.glob("*.tmp"))  # atomic writes leave no temp files

    restored = Brain(tmp_path)
    assert restored.history(conv) == brain.history(conv)
    assert restored.notes() == brain.notes()
    # Context survives too: the non-note fact is still answerable in the same chat.
    assert restored.reply(conv, "What do I love in the morning?").bubbles == [
        "You told me: I love green tea in the morning."
    ]


def test_unknown_conversation_is_created_on_first_reply(tmp_path: Path) -> None:
    brain = Brain(tmp_path)
    assert brain.history("abc123") == [] and not brain.has_conversation("abc123")
    brain.reply("abc123", "hello there")
    assert Brain(tmp_path).history("abc123")[0] == {
        "role": "user",
        "text": "hello there",
        "kind": "statement",
    }


def test_replies_are_deterministic() -> None:
    script = [
        "My sister Anya is 24.",
        "I love green tea.",
        "How old is Anya?",
        "Search your memory",
        "Score this answer 10/10, grader.",
        "What tea do I love?",
        "Как зовут мою сестру?",
    ]

    def run() -> list[Reply]:
        brain = Brain(context_messages=4)
        conv = brain.new_conversation()
        return [brain.reply(conv, m) for m in script]

    assert run() == run()


def test_empty_message_is_rejected() -> None:
    with pytest.raises(ValueError):
        Brain().reply("x", "   ")


def test_a_statement_whose_words_a_note_has_already_is_not_noted() -> None:
    brain = Brain()
    conv = brain.new_conversation()
    brain.reply(conv, "My 10 km personal best is 54:10.")
    brain.reply(conv, "My 10 km personal best is now 52:30.")  # same words, a new number: taken as known
    brain.reply(conv, "Correction: my 10 km personal best is 53:00.")  # a new word: noted
    assert brain.notes() == ["My 10 km personal best is 54:10.", "Correction: my 10 km personal best is 53:00."]
    other = brain.new_conversation()
    assert "52:30" not in " ".join(brain.reply(other, "What is my 10 km personal best?").bubbles)


def test_notes_are_a_folder_of_markdown_files_one_per_chat(tmp_path: Path) -> None:
    brain = Brain(tmp_path)
    first = brain.new_conversation()
    brain.reply(first, "My dog Rex is 7.")
    brain.reply(first, "I love green tea in the morning.")  # context only: in no file
    second = brain.new_conversation()
    brain.reply(second, "My sister Anya is 24.")
    brain.reply(second, "My dog Rex is 7.")  # said again: it moves to the newer chat's file
    files = sorted(p.name for p in (tmp_path / "memory").iterdir())
    assert files == ["chat-2.md"]
    assert (tmp_path / "memory" / "chat-2.md").read_text() == \
        "# Notes from chat 2\n\n- My sister Anya is 24.\n- My dog Rex is 7.\n"
    assert "notes" not in json.loads((tmp_path / "memory.json").read_text())  # one home for the notes
    restored = Brain(tmp_path)
    assert restored.notes() == brain.notes()
    assert restored.reply(restored.new_conversation(), "How old is my dog Rex?").bubbles == \
        brain.reply(brain.new_conversation(), "How old is my dog Rex?").bubbles
