"""Profile for Hydrogen, the Matrix web client (element-hq/hydrogen-web), talking to a bot in a DM.

Tested: Hydrogen 0.3.1 (npm `hydrogen-view-sdk` 0.3.1, the whole client as a library) on Synapse
1.163.2, with OpenClaw 2026.9.6's Matrix channel (`@openclaw/matrix`) as the bot, in an end-to-end
encrypted DM (tests/frontends/test_matrix.py). Element Web, the reference client, is on no package
registry (see tests/support/matrix_client.py for what was looked at), hence Hydrogen.

Log in once, then point a run at the DM with the bot:

    mmb login hydrogen --url https://hydrogen.example.org/      # sign in, then press Enter

(the storage state keeps localStorage and IndexedDB, where Hydrogen keeps the session, the sync
state and the encryption keys: a secret, as every login is; each run's browser starts from that
snapshot of the device's keys, which a new `mmb login` refreshes), then
`"agent": {"driver": "hydrogen", "auth": "hydrogen", "url": "https://hydrogen.example.org/#/session/<n>/room/!<room id>"}`:
the DM's address as the address bar shows it once the DM is open. `<n>` is the login's session, so
a new `mmb login` needs the new address. (`#/last-session/room/…` would outlive it, but Hydrogen
0.3.1 reads the last session only after it has parsed the address, so on opening it shows the last
room open instead of the one named.)

What Hydrogen does, as driven here (plain DOM, one `li` per event):
- our messages are `li.Timeline_message.own`, everyone else's have no `own`: the client marks
  the sides itself, so no author names are needed. A message that follows one of the same sender
  is a `continuation` without the sender's name and avatar; a bot's answer in several messages is
  several of them, all collected;
- the time (`time`), the sender's name and avatar and the "⋯" menu sit inside each message and are
  stripped; date separators (`h2.DateHeader`) and room notices (`li.AnnouncementView`) are not
  messages;
- a message that could not be decrypted yet shows a status text in its place ("The sender hasn't
  sent us the key for this message yet.") and is replaced by the real one when the key comes: it is
  ignored, never taken as the reply;
- Hydrogen shows no typing notices (nor read receipts): there is no busy marker, so a reply is over
  after the messenger's quiet window with no change (drivers/messenger.py);
- the composer is a textarea; Enter sends. A text starting with "/" is Hydrogen's own command
  (/me, /join…; an unknown one is refused with an error and not sent), and "//" sends the rest as
  text: the bot's new-session command is typed as `//new` and arrives as `/new`.
"""

from .messenger import BOT_COMMAND_NEW, messenger_profile
from .profile import Selectors

_TIMELINE = ".RoomView_body .Timeline_scroller"

PROFILE = messenger_profile(
    "hydrogen",
    url="https://hydrogen.element.io/",  # where `mmb login` opens Hydrogen by default; --url for your own
    selectors=Selectors(
        input=".RoomView_body .MessageComposer_input textarea",
        send=None,
        assistant_message=f"{_TIMELINE} li.Timeline_message:not(.own)",
        user_message=f"{_TIMELINE} li.Timeline_message.own",
        strip=".Timeline_messageSender, .Timeline_messageAvatar, .Timeline_messageOptions, "
              ".Timeline_messageReactions, time",
        ignore="li.Timeline_message:has(> .Timeline_messageBody.statusMessage)",
        error=".RoomView_body .ErrorView",
        ready=_TIMELINE,
    ),
    input_method="fill",  # a plain textarea
    new_session_message="/" + BOT_COMMAND_NEW,
)
