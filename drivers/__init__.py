"""Chat drivers: how the persona's messages reach an agent's chat UI and how replies come back.

`base.ChatDriver` is the interface; `generic.PlaywrightDriver` drives any web chat from a
`profile.Profile` of selectors; one small module per frontend holds its ready profile.
"""
