"""Linking checks to facts (persona/benchmark/links.py), and the age of a fact when it was asked about."""

from __future__ import annotations

from persona.benchmark.facts import parse_fact_file
from persona.benchmark.links import FactIndex, words
from persona.benchmark.phases import Category, Check
from persona.report.decay import asked_turn, check_ages
from persona.tokens import TokenCounter
from tests.support.runs import demo_run


def facts(text: str, name: str = "family"):
    ff, problems = parse_fact_file(text, name, f"{name}.md")
    assert not problems
    return ff


FAMILY = facts("""# Family
## 1. Partner
1.1 My partner Jonas is a carpenter
1.2 Jonas's birthday is on 9 April
## 2. Sister
2.1 My sister Klara has two kids, Ebba and Noah
2.2 My sister lives in Malmö
""")


def test_words_drop_stopwords_cut_stems_and_read_number_words():
    assert words("What are the names of my sister's kids?") == {"names", "siste", "kids"}
    assert words("Sundays") == words("Sunday") == {"sunda"}
    assert words("two kids") == {"2", "kids"}
    assert words("ran 14 km in 1:02:30") == {"ran", "14", "1:02:30"}


def check(check_id: str, question: str, answer: str, category: Category = Category.single) -> Check:
    return Check(id=check_id, category=category, question=question, answer=answer)


def test_a_check_links_to_the_fact_sharing_its_rarest_words():
    index = FactIndex.of_files({"family": FAMILY})
    links = index.link(check("q1", "What are the names of my sister's kids?", "Ebba; Noah"))
    assert links.how == "inferred"
    assert [(link.file, link.fact_id) for link in links.facts] == [("family", "2.1")]  # "sister" alone would tie with 2.2
    assert set(links.facts[0].shared) >= {"ebba", "noah"}


def test_nothing_is_linked_below_the_threshold_and_explicit_ids_win():
    index = FactIndex.of_files({"family": FAMILY})
    assert index.link(check("q2", "What is my hair colour?", "red")).how == "unlinked"
    assert index.link(check("q2", "What is my blood type?", "you didn't tell me", Category.absent)).how == "absent"
    explicit = index.link(check("family.1.2", "When do we celebrate?", "in spring"))
    assert explicit.how == "id" and [(link.fact_id, link.score) for link in explicit.facts] == [("1.2", float("inf"))]


def test_a_deleted_fact_is_found_through_its_text_in_the_benchmark():
    live = {"family": FAMILY.model_copy(deep=True)}
    live["family"].get("2.2").text = "—"
    blind = FactIndex.of_files(live).link(check("q", "Where does my sister live?", "Malmö"))
    assert [link.fact_id for link in blind.facts] == ["2.1"]  # only "sister" is left to go by: the wrong fact
    links = FactIndex.of_files(live, {"family": FAMILY}).link(check("q", "Where does my sister live?", "Malmö"))
    assert links.facts[0].fact_id == "2.2" and "was: My sister lives in Malmö" in links.facts[0].text


def test_ages_count_turns_and_tokens_from_the_last_change_to_the_question():
    state, exchanges, bench = demo_run()
    counter = TokenCounter()
    ages = {a.check_id: a for a in check_ages(state, exchanges, counter, bench)}
    d1, d2, d9 = ages["d1"], ages["d2"], ages["d9"]
    # d1 was graded on the memory-search retry (turn 8) but asked at turn 7; told at turn 1.
    assert (d1.asked_turn, d1.basis, d1.turns, d1.fact.fact_id) == (7, "told", 6, "1.1")
    between = [ex for ex in exchanges if 1 < ex.turn < 7]
    assert d1.tokens == sum(counter.count(ex.sent) + counter.count(ex.reply[0]) for ex in between)
    assert d1.new_session_between
    # d2 asks about a fact changed at turn 5: the age runs from the change, not from turn 2.
    assert (d2.basis, d2.turns, d2.fact.file, d2.fact.fact_id) == ("changed", 4, "running", "1.2")
    # absent checks have no fact and no age.
    assert d9.links == [] and d9.turns is None


def test_the_asked_turn_falls_back_to_the_graded_turn():
    state, exchanges, _ = demo_run()
    e = state.evaluations[0].model_copy(update={"question": "Something never typed"})
    assert asked_turn(e, exchanges) == 7, "where the chat the grader read begins, whatever the words"
    e = e.model_copy(update={"agent_turns": []})  # a run of an older version
    assert asked_turn(e, exchanges) == e.turn
