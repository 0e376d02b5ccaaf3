"""`deblur serve` under load, on loopback: many clients at once, good photos, bad files and aborted uploads.

Starts the server in its own process (the model shipped with deblur by default), deblurs each photo once alone
to have its correct answer, then lets --clients threads send --requests requests between them, mixed: small and
1280x720 photos, files that are not images, truncated files, a decompression bomb, and uploads cut off halfway.
Checks that every request is answered 200, 400, 413, 415 or 503 (an aborted upload gets no answer: its client is
gone), that every 200 is exactly the photo's correct answer, that the server is healthy afterwards, and how its
memory compares with before. Prints the figures. `tests/test_serve_load.py` runs the same with a tiny model.

    python benchmarks/serve_load.py [--model pretrained|F] [--clients 16] [--requests 48] [--queue 8]
"""

from __future__ import annotations

import argparse
import json
import sys

from deblur.serve.loadtest import request, run_load, running_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--queue", type=int, default=8)
    args = parser.parse_args()
    options = ["--queue", str(args.queue)] + (["--model", args.model] if args.model else [])
    with running_server(*options) as server:
        _, _, body = request(server.host, server.port, "GET", "/v1/model")
        info = json.loads(body)
        print(f"server: {info['description']}, {info['precision']}; line of {info['limits']['line']}")
        report = run_load(server, clients=args.clients, requests=args.requests)
    print(report.summary())
    problems = report.problems()
    print("problems: " + ("; ".join(problems) if problems else "none"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
