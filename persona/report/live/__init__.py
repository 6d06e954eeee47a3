"""`mmb view`: the results folder's pages served live, as runs write them.

watch.py follows the folder (one poll for every client, reading only), pages.py renders the static
pages' own templates from it with the fragments a page replaces, app.py is the ASGI app (Starlette)
with its server-sent events, server.py binds and runs it on uvicorn, locks.py tells whether a
process plays a run. Like the rest of the report layer it reads saved files alone, and it never
writes into a run's folder or takes its lock.
"""
