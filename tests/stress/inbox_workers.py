"""Worker processes for the mailbox stress test and the bench.

    python -m tests.stress.inbox_workers push --to NAME --count N --tag TAG [--pause S]
        pushes N mails through the store (the same code path as `inbox push`) and prints
        each id on its own line.
    python -m tests.stress.inbox_workers raw --to NAME --count N --tag TAG
        appends N lines under the same mailbox lock with no mail logic at all, each
        synced as a push is (durable on return) — the baseline the bench compares
        push+drain against.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["push", "raw"])
    parser.add_argument("--to", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--pause", type=float, default=0.0)
    args = parser.parse_args(argv)

    from codexbridge.host.locking import FileLock
    from codexbridge.host.mailboxes import inbox_dir
    from codexbridge.host.private import ensure_private_dir
    from codexbridge.inbox.location import lock_path, mail_path

    directory = inbox_dir()
    ensure_private_dir(directory)
    if args.mode == "raw":
        path = mail_path(directory, args.to)
        for i in range(args.count):
            line = f'{{"id":"{args.tag}-{i}","text":"{args.tag}-{i}"}}\n'.encode()
            with FileLock(lock_path(directory, args.to)):
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
        return 0

    from codexbridge.inbox import store
    from codexbridge.inbox.lines import new_mail

    ids = []
    for i in range(args.count):
        mail = new_mail(f"{args.tag}-{i}", to=args.to, sender=args.tag)
        store.push(directory, mail)
        ids.append(mail.mail_id or "")
        if args.pause:
            time.sleep(args.pause)
    sys.stdout.write("".join(f"{mail_id}\n" for mail_id in ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
