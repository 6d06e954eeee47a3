"""Importers: published memory datasets (LoCoMo, LongMemEval) turned into benchmark folders.

Those datasets are off-policy: a pre-written conversation is loaded into the system under test
through a special entry. An importer turns one into a benchmark of this tool instead: the persona
lives the conversation's owner's life and tells it through the chat, session by session, then asks
the dataset's questions, which the judge grades against the dataset's answers.

    common.py        what every importer builds (fact files, phases, checks), the counts of what was
                     repaired or dropped, reading the input JSON with file:line errors
    writer.py        the benchmark folder from that, SOURCE.md included
    first_person.py  "When did Caroline ..." asked by Caroline as "When did I ..."
    locomo.py        LoCoMo (both shapes of its files)
    longmemeval.py   LongMemEval (its oracle variant, and the evidence sessions of the others)
"""
