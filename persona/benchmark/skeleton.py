"""`mmb new NAME`: a small benchmark folder that validates, dry-runs at 100 %, and shows every feature.

An author (or a coding agent) starts from something that works and replaces the content; the
structure (a profile and a fact file told under require_all_facts, a change and an addition, a new
chat, checks of every category) is what a good benchmark keeps.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from persona.benchmark.loader import manifest_schema
from persona.errors import InputError

SCHEMA_FILE = "benchmark.schema.json"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "instructions.md": """\
You are Alex Morgan, 34, a nurse in Leeds. Today is Saturday, 6 June 2026. You have just started
using a new AI assistant and want it to remember your life, so that it can help you later.

How you write: friendly, short messages of one to three sentences, British English. Tell a few
facts per message and answer the assistant's questions as Alex would. When you ask a check
question, ask it plainly and give no hints.
""",
        "profile.md": """\
# Alex Morgan

## 1. About me
1.1 I'm Alex Morgan, 34 years old
1.2 I work as a nurse at St Mary's Hospital
1.3 I live in Leeds with my partner Sam

## 2. Habits
2.1 I drink my tea with milk and no sugar
2.2 I swim every Monday and Friday morning
""",
        "family.md": """\
# Family

## 1. Partner Sam
1.1 My partner Sam is a primary school teacher
1.2 Sam's birthday is on 3 March

## 2. Parents
2.1 My mum Helen lives in York
2.2 My dad Peter grows tomatoes on his allotment
""",
        "chapter1.md": """\
# Chapter 1: telling

Author's note (never shown to the persona): the persona introduces itself and tells everything;
then some news changes one fact and adds another. Replace the people and the facts with yours.

## Getting to know each other
```js
vars.require_all_facts = ["profile", "family"];
```
📅 2026-06-06 09:30
It is Saturday morning. Say hello and explain that you want the assistant to get to know you.
Introduce yourself: tell the facts from profile, then the facts from family. Answer the
assistant's questions briefly.

## Small talk
Ask the assistant for a quick idea for tonight's dinner and chat about its answer for a message or
two. No new facts about yourself.

## News
Tell the news in passing: you have just accepted a new job, and your mum adopted a cat.
✏️ profile 1.2: I now work as a nurse at Leeds General Infirmary
➕ family 2: My mum Helen adopted a cat called Pebble
""",
        "chapter2.md": """\
# Chapter 2: the exam

Author's note: a new chat, so the assistant can answer only from its long-term memory. The date
line is the story's day: the persona tells it to the assistant, whose own clock does not know it.

## The next day
```js
await bench.newSession();
bench.log("the exam starts in a new chat");
```
📅 2026-06-07 10:00
It is the next day and you open a new chat. Greet the assistant as someone it already knows, then
ask the questions one by one, as if you were curious what it remembers.
❓ s1 [single] What does Sam do for a living? Correct answer: primary school teacher
❓ s2 [updated] Where do I work now? Correct answer: Leeds General Infirmary
❓ s3 [single] On which days do I swim? Correct answer: Monday; Friday
❓ s4 [temporal] When is Sam's birthday? Correct answer: 3 March

## Before you go
Ask a few more questions, then say goodbye.
❓ s5 [preference] How do I take my tea? Correct answer: with milk, no sugar
❓ s6 [aggregate] How many times a week do I swim? Correct answer: 2 🔗 profile 2.2
❓ s7 [updated] What is my mum's cat called? Correct answer: Pebble
❓ s8 [absent] What is my blood type? Correct answer: you didn't tell me
""",
    },
    "ru": {
        "instructions.md": """\
Ты — Саша Орлова, 34 года, медсестра из Казани. Сегодня суббота, 6 июня 2026 года. Ты только что
начала пользоваться новым ИИ-ассистентом и хочешь, чтобы он запомнил твою жизнь и потом помогал.

Как ты пишешь: дружелюбно, коротко, одно-три предложения. Рассказывай по несколько фактов за
сообщение и отвечай на вопросы ассистента так, как ответила бы Саша. Контрольные вопросы задавай
просто, без подсказок.
""",
        "profile.md": """\
# Саша Орлова

## 1. Обо мне
1.1 Меня зовут Саша Орлова, мне 34 года
1.2 Я работаю медсестрой в детской больнице
1.3 Я живу в Казани с мужем Ильёй

## 2. Привычки
2.1 Я пью чай с лимоном и без сахара
2.2 Я плаваю по понедельникам и пятницам утром
""",
        "family.md": """\
# Семья

## 1. Муж Илья
1.1 Мой муж Илья работает учителем физики
1.2 День рождения Ильи 3 марта

## 2. Родители
2.1 Моя мама Галина живёт в Самаре
2.2 Мой папа Пётр выращивает помидоры на даче
""",
        "chapter1.md": """\
# Глава 1: знакомство

Заметка автора (персона её не видит): персона знакомится и рассказывает всё о себе; потом новость
меняет один факт и добавляет другой. Замени людей и факты на свои.

## Знакомство
```js
vars.require_all_facts = ["profile", "family"];
```
📅 2026-06-06 09:30
Субботнее утро. Поздоровайся и объясни, что хочешь, чтобы ассистент тебя узнал. Представься:
расскажи факты из profile, потом факты из family. На вопросы ассистента отвечай коротко.

## Болтовня
Попроси у ассистента идею для ужина и обсуди его ответ в одном-двух сообщениях. Новых фактов о
себе не рассказывай.

## Новости
Между делом расскажи новости: ты перешла на новую работу, а мама взяла кошку.
✏️ profile 1.2: Теперь я работаю медсестрой в республиканской клинической больнице
➕ family 2: Моя мама Галина взяла кошку по кличке Муся
""",
        "chapter2.md": """\
# Глава 2: экзамен

Заметка автора: новый чат, так что ассистент может ответить только из долгой памяти. Строка с датой —
день в сюжете: персона сообщает его ассистенту, чьи собственные часы его не знают.

## На следующий день
```js
await bench.newSession();
bench.log("экзамен начинается в новом чате");
```
📅 2026-06-07 10:00
Наступил следующий день, ты открываешь новый чат. Поздоровайся как со старым знакомым и задай
вопросы по одному, как будто тебе любопытно, что он помнит.
❓ s1 [single] Кем работает Илья? Правильный ответ: учитель физики
❓ s2 [updated] Где я теперь работаю? Правильный ответ: республиканская клиническая больница
❓ s3 [single] По каким дням я плаваю? Правильный ответ: понедельник; пятница
❓ s4 [temporal] Когда день рождения Ильи? Правильный ответ: 3 марта

## Перед уходом
Задай ещё несколько вопросов и попрощайся.
❓ s5 [preference] Какой чай я пью? Правильный ответ: с лимоном, без сахара
❓ s6 [aggregate] Сколько раз в неделю я плаваю? Правильный ответ: 2 🔗 profile 2.2
❓ s7 [updated] Как зовут мамину кошку? Правильный ответ: Муся
❓ s8 [absent] Какая у меня группа крови? Правильный ответ: ты мне не говорила
""",
    },
}
TITLES = {"en": "{name}: a weekend in Alex's life", "ru": "{name}: выходные Саши"}


def _schema_ref(parent: Path, target: Path) -> tuple[str, Path | None]:
    """`$schema` for editors: the one beside the benchmark folders, written there if there is none yet."""
    schema = parent / SCHEMA_FILE
    written = None
    if not schema.exists():
        schema.write_text(json.dumps(manifest_schema(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written = schema
    return os.path.relpath(schema, target).replace(os.sep, "/"), written


def create_skeleton(name: str, parent: Path, language: str = "en") -> list[Path]:
    """Write the folder parent/name; refuses to touch an existing one. Returns the files written."""
    if not NAME.match(name):
        raise InputError.single(name, None, "a benchmark name is a folder name: letters, digits, '.', '_', '-'")
    if language not in TEMPLATES:
        raise InputError.single(name, None, f"no skeleton for language {language!r} (have: {', '.join(TEMPLATES)})")
    target = parent / name
    if target.exists():
        raise InputError.single(target, None, "already exists; choose another name or delete it first")
    target.mkdir(parents=True)
    schema_ref, written = _schema_ref(parent, target)
    manifest = {
        "$schema": schema_ref,
        "title": TITLES[language].format(name=name),
        "language": language,
        "description": "Replace with what this benchmark measures.",
        "chapters": ["chapter1.md", "chapter2.md"],
        "fact_files": ["family.md"],
    }
    files = [target / "benchmark.json"]
    files[0].write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for file, text in TEMPLATES[language].items():
        (target / file).write_text(text, encoding="utf-8")
        files.append(target / file)
    return files + ([written] if written else [])
