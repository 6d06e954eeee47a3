"""Telegram Web K and A markup fixtures (k/, a/) and the simulated bot they share (bot.js).

Served with tests/support/static_site.serve(HERE), a test opens http://127.0.0.1:PORT/k/#@membot
the way a user opens https://web.telegram.org/k/#@<bot>.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
BOT = "membot"
