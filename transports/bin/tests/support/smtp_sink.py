"""A real SMTP server for the e-mail tests (aiosmtpd), on 127.0.0.1:PORT [DELAY seconds
before answering each message's data].

Recipients decide the answer, so one server covers every case:
  bounce*@...  -> 550 5.1.1 at RCPT (a refused recipient)
  later*@...   -> 421 4.3.2 at RCPT the first time for that address, accepted after
  anything else accepted.
Every event is one JSON line on stdout: {"event": "refused", "rcpt": ..., "code": ...}
or {"event": "message", ...} with the envelope and the message as Python's own e-mail
parser reads it (headers, the text and HTML parts decoded), so the tests check what a
mail client would see, not what our client meant to write.
"""
import asyncio
import json
import sys
from email import policy
from email.parser import BytesParser

from aiosmtpd.controller import Controller


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Handler:
    def __init__(self, delay):
        self.seen = {}
        self.delay = delay

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@")[0].lower()
        if local.startswith("bounce"):
            emit({"event": "refused", "rcpt": address, "code": 550})
            return "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        if local.startswith("later"):
            n = self.seen.get(address, 0)
            self.seen[address] = n + 1
            if n == 0:
                emit({"event": "refused", "rcpt": address, "code": 421})
                return "421 4.3.2 Service temporarily unavailable, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.delay:
            # A slow relay: sends of several senders overlap.
            await asyncio.sleep(self.delay)
        msg = BytesParser(policy=policy.default).parsebytes(envelope.original_content)
        text = msg.get_body(preferencelist=("plain",))
        html = msg.get_body(preferencelist=("html",))
        emit({
            "event": "message",
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "headers": {k.lower(): str(v) for k, v in msg.items()},
            "content_type": msg.get_content_type(),
            "text": text.get_content() if text is not None else None,
            "html": html.get_content() if html is not None else None,
        })
        return "250 2.0.0 Ok: queued"


def main():
    port = int(sys.argv[1])
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    controller = Controller(Handler(delay), hostname="127.0.0.1", port=port)
    controller.start()
    emit({"event": "ready", "port": port})
    try:
        # Until the test closes stdin (or dies).
        sys.stdin.read()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
