"""`python -m demo_agent`: serve DemoMind in the foreground."""

from __future__ import annotations

import argparse
from pathlib import Path

from demo_agent.web import DemoChatServer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m demo_agent", description="Serve the DemoMind chat agent."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--data", type=Path, default=None, help="memory directory (default: in memory only)"
    )
    parser.add_argument("--context-messages", type=int, default=40)
    args = parser.parse_args(argv)
    server = DemoChatServer(args.data, context_messages=args.context_messages)
    url = server.start(args.host, args.port)
    print(f"DemoMind is serving at {url}  (Ctrl+C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
